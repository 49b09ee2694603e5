"""The Python package without a GPU: configs, plans, precompile into a scratch
cache, errors naming the field, and tensors refused before anything launches
(NumPy arrays stand in for CPU tensors and wrong dtypes and shapes).

    python3 -m unittest discover -s python/tests -v
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

_CACHE = tempfile.TemporaryDirectory(prefix="moejit-pytest-cache-")
os.environ["MOEJIT_CACHE_DIR"] = _CACHE.name  # before moejit's first kernel-cache use
os.environ.pop("MOEJIT_NO_JIT", None)

import numpy as np  # noqa: E402

import moejit  # noqa: E402
from moejit.layer import forward_args  # noqa: E402

SMALL = {"name": "py-small", "experts": 8, "top_k": 2, "hidden": 512, "intermediate": 256}


class HostBf16:
    """A host BF16 array as torch would describe one (NumPy has no bfloat16):
    what moejit reads of a tensor is its dtype name, shape, layout and device."""

    def __init__(self, shape):
        self._a = np.zeros(shape, np.uint16)
        self.shape = self._a.shape
        self.dtype = "torch.bfloat16"
        self.flags = self._a.flags

    def __dlpack_device__(self):
        return (1, 0)


def field_of(f):
    try:
        f()
    except moejit.MoejitError as e:
        return e.field
    return "(accepted)"


class Configs(unittest.TestCase):
    def test_builtin_dict_and_file(self):
        self.assertEqual(moejit.builtin_models(), ["glm5.2", "dsv4.1-flash", "gpt-oss-120b", "gpt-oss-20b"])
        glm = moejit.config("glm5.2")
        self.assertEqual(glm["name"], "glm5.2")
        self.assertEqual(moejit.config(glm), glm)
        small = moejit.config(SMALL)
        self.assertEqual(small["token_capacity"], 256)  # defaults filled in
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "small.json")
            with open(path, "w") as f:
                json.dump(SMALL, f)
            self.assertEqual(moejit.config(path)["hidden"], 512)

    def test_gpt_oss(self):
        oss = moejit.config("gpt-oss-120b")
        self.assertEqual((oss["hidden"], oss["intermediate"], oss["experts"], oss["top_k"]), (2880, 2880, 128, 4))
        self.assertEqual((oss["activation"], oss["gate_up"], oss["biases"]), ("gpt-oss", "interleaved", True))
        self.assertAlmostEqual(oss["alpha"], 1.702, places=6)
        self.assertEqual(oss["swiglu_clamp"], 7.0)
        shapes = moejit.weight_shapes(oss)
        self.assertEqual((shapes["b1"], shapes["b2"]), ((128, 5760), (128, 2880)))
        self.assertNotIn("b1", moejit.weight_shapes(moejit.config("glm5.2")))
        # A fused shared expert is one more expert in every weight array, the last.
        shared = moejit.config({**moejit.config("glm5.2"), "shared_expert": {"k_group": 128}})
        self.assertEqual(moejit.weight_shapes(shared)["w1"], (257, 2 * 2048, 6144 // 2))
        self.assertTrue(any(n.startswith("fused shared expert: expert 256")
                            for n in moejit.plan(shared, 8)["notes"]))
        # H and I any multiple of 32: the kernels pad to 128 inside.
        self.assertEqual(moejit.config({**SMALL, "hidden": 544, "intermediate": 288})["hidden"], 544)
        self.assertEqual(moejit.plan({**SMALL, "hidden": 544}, 8)["compute"]["launched"], True)
        self.assertEqual(field_of(lambda: moejit.config({**SMALL, "activation": "gelu"})), "activation")

    def test_errors_name_the_field(self):
        self.assertTrue(issubclass(moejit.MoejitError, ValueError))
        self.assertEqual(field_of(lambda: moejit.config({**SMALL, "hidden": 520})), "hidden")
        self.assertEqual(field_of(lambda: moejit.config({**SMALL, "top_k": 9})), "top_k")
        no_i = dict(SMALL)
        del no_i["intermediate"]
        self.assertEqual(field_of(lambda: moejit.config(no_i)), "intermediate")
        self.assertEqual(field_of(lambda: moejit.config({**SMALL, "hiden": 512})), "hiden")
        self.assertEqual(field_of(lambda: moejit.config("llama")), "config")
        self.assertEqual(field_of(lambda: moejit.config(42)), "config")
        try:
            moejit.config({**SMALL, "hidden": 520})
        except moejit.MoejitError as e:
            self.assertIn("520", str(e))
            self.assertIn("multiple of 32", str(e))


class Plans(unittest.TestCase):
    def test_plan_on_h200(self):
        p = moejit.plan("glm5.2", 8)
        self.assertEqual(p["batch"], 8)
        self.assertEqual(p["schedule"], "stream")
        self.assertEqual(moejit.plan("glm5.2", 1)["schedule"], "units")  # planned at B = 1 (the H200's fast path)
        self.assertEqual(moejit.plan("glm5.2", 1, schedule="stream")["schedule"], "stream")
        self.assertEqual(moejit.plan("glm5.2", 1, path="exact")["schedule"], "items")  # the exact path's at B = 1
        self.assertEqual(moejit.plan("glm5.2", 64, path="exact", schedule="items")["schedule"], "items")
        self.assertTrue(moejit.plan("glm5.2", 2)["pdl"])  # PDL between the roles, planned up to B = 4
        self.assertFalse(p["pdl"])
        self.assertFalse(moejit.plan("glm5.2", 1, pdl=False)["pdl"])  # the option is what launches
        self.assertTrue(moejit.plan("glm5.2", 1, pdl=None)["pdl"])  # None: as planned
        self.assertEqual(p["target"], "sm_90a")
        self.assertGreater(p["compute"]["grid"], 0)
        self.assertEqual(moejit.plan("glm5.2", 8, path="fast")["path"], "fast")
        self.assertEqual(moejit.workspace_bytes("glm5.2"), p["workspace_bytes"])

    def test_plan_on_h100(self):
        # H100 SXM5 has the H200's SMs: its own profile name, the same launch.
        self.assertIn("h100", moejit.builtin_devices())
        for b in (1, 8, 256):
            h100, h200 = moejit.plan("glm5.2", b, "h100"), moejit.plan("glm5.2", b, "h200")
            self.assertEqual(h100["compute"], h200["compute"])
            self.assertEqual(h100["schedule"], h200["schedule"])

    def test_w4a16_recipe(self):
        cfg = {"name": "w", "experts": 32, "top_k": 4, "hidden": 1024, "intermediate": 512, "recipe": "w4a16"}
        p = moejit.plan(cfg, 8)
        self.assertEqual(p["atom"], "sm90-bf16-mma-w4a16")
        self.assertTrue(p["input_bf16"])  # BF16 x is the recipe's one input format
        self.assertFalse(p["dispatch"]["launched"])  # the compute role reads the caller's x
        with self.assertRaisesRegex(moejit.MoejitError, "no fast compute path for recipe w4a16"):
            moejit.plan(cfg, 8, path="fast")
        bad = dict(cfg, recipe="w4a4")
        self.assertEqual(field_of(lambda: moejit.plan(bad, 8)), "recipe")

    def test_plan_errors(self):
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 0)), "batch")
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 8, device="a100")), "device")
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 8, path="turbo")), "path")
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 8, tile_n=12)), "tile_n")
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 8, schedule="rounds")), "schedule")
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 16, schedule="units")), "schedule")
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 1, schedule="items")), "schedule")  # exact path only
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 8, warp_speed=True)), "warp_speed")
        # An option of the wrong type names itself (it was RuntimeError('std::bad_cast')).
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 8, tile_n="64")), "tile_n")
        self.assertEqual(field_of(lambda: moejit.plan("glm5.2", 8, pdl="yes")), "pdl")
        with self.assertRaisesRegex(moejit.MoejitError, r"stages = '4' is invalid: must be an int"):
            moejit.plan("glm5.2", 8, stages="4")


class Precompile(unittest.TestCase):
    def test_into_a_scratch_cache(self):
        calls = []
        r = moejit.precompile(SMALL, "1-2", targets=["sm_90a"], progress=lambda d, t, k: calls.append((d, t, k)))
        self.assertTrue(r["ok"])
        self.assertGreaterEqual(r["kernels"], 2)
        self.assertEqual(r["compiled"] + r["cached"], r["kernels"])
        self.assertEqual(len(calls), r["kernels"])
        self.assertEqual(sorted(d for d, _, _ in calls), list(range(1, r["kernels"] + 1)))
        entries = os.listdir(os.path.join(_CACHE.name, "v1"))
        self.assertGreaterEqual(len(entries), r["kernels"])
        again = moejit.precompile(SMALL, [1, 2])
        self.assertEqual(again["cached"], again["kernels"])

    def test_a_raising_progress_callback_reaches_the_caller(self):
        # The callback runs on a compile thread: its exception (here a TypeError, the callback takes two
        # arguments, not three) aborted the whole process. It now stops the work and reaches the caller as itself.
        code = (
            "import moejit\n"
            "try:\n"
            f"    moejit.precompile({SMALL!r}, [1], targets=['sm_90a'], progress=lambda done, total: None)\n"
            "except TypeError as e:\n"
            "    print('raised TypeError:', e)\n"
        )
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("raised TypeError:", r.stdout)

    def test_a_raising_progress_callback_stops_the_compile(self):
        # Into an empty cache, one job: the callback raises after the first kernel, and no other kernel is built.
        code = (
            "import os, moejit\n"
            "calls = []\n"
            "def progress(done, total, kernel):\n"
            "    calls.append(done)\n"
            "    raise ValueError('stop')\n"
            "try:\n"
            f"    moejit.precompile({SMALL!r}, '1-2', targets=['sm_90a'], jobs=1, progress=progress)\n"
            "except ValueError:\n"
            "    names = os.listdir(os.path.join(os.environ['MOEJIT_CACHE_DIR'], 'v1'))\n"
            "    print('calls', len(calls), 'entries', sum(len(n) == 64 for n in names))\n"
        )
        with tempfile.TemporaryDirectory(prefix="moejit-pytest-stop-") as d:
            env = dict(os.environ, MOEJIT_CACHE_DIR=d)
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("calls 1 entries 1", r.stdout)

    def test_batch_ranges_are_checked_before_they_are_expanded(self):
        # "1-999999999" built a billion ints before the C++ side refused it.
        self.assertEqual(field_of(lambda: moejit.precompile(SMALL, "1-999999999")), "batches")
        self.assertEqual(field_of(lambda: moejit.precompile(SMALL, "5-2")), "batches")

    def test_errors(self):
        self.assertEqual(field_of(lambda: moejit.precompile(SMALL, "0-2")), "batch")
        self.assertEqual(field_of(lambda: moejit.precompile(SMALL, "x")), "batches")
        self.assertEqual(field_of(lambda: moejit.precompile(SMALL, [1], targets=["sm_75"])), "targets")


class Tensors(unittest.TestCase):
    cfg = moejit.config(SMALL)

    def weights(self, **replace):
        w = {name: np.zeros(shape, dtype=np.uint8) for name, shape in moejit.weight_shapes(self.cfg).items()}
        w.update(replace)
        return w

    def test_layer_refuses_cpu_and_wrong_weights(self):
        with self.assertRaisesRegex(moejit.MoejitError, r"w1 is on cpu: it must be a CUDA tensor \(on cuda:0\)"):
            moejit.MoeLayer(SMALL, **self.weights())
        # Every tensor's dtype and shape are checked before any device: the first refusal is the specific one.
        with self.assertRaisesRegex(moejit.MoejitError, r"s2: dtype float32 is invalid: must be uint8"):
            moejit.MoeLayer(SMALL, **self.weights(s2=np.zeros((8, 512, 8), np.float32)))
        with self.assertRaisesRegex(moejit.MoejitError, r"w2: shape \[8, 512, 64\] is invalid: must be \[8, 512, 128\]"):
            moejit.MoeLayer(SMALL, **self.weights(w2=np.zeros((8, 512, 64), np.uint8)))
        self.assertEqual(field_of(lambda: moejit.MoeLayer(SMALL, **self.weights(s1=None))), "s1")
        self.assertEqual(field_of(lambda: moejit.MoeLayer(SMALL, **self.weights(w1=[[1, 2]]))), "w1")

    def test_forward_refuses_cpu_wrong_dtype_and_shape(self):
        b, h, k = 4, 512, 2
        good = dict(x=np.zeros((b, h), np.uint8), topk_ids=np.zeros((b, k), np.int32),
                    topk_weights=np.zeros((b, k), np.float32), out=HostBf16((b, h)),
                    x_scales=np.zeros((b, h // 128), np.int32))

        def call(input_bf16=False, **replace):
            a = {**good, **replace}
            return forward_args(self.cfg, 0, input_bf16, a["x"], a["topk_ids"], a["topk_weights"], a["out"],
                                a["x_scales"])

        cases = [
            (dict(x=np.zeros((b, h), np.float32)), r"x: dtype float32 is invalid: must be float8_e4m3fn or uint8"),
            (dict(topk_ids=np.zeros((b, k), np.int64)), r"topk_ids: dtype int64 is invalid: must be int32"),
            (dict(topk_weights=np.zeros((b, 3), np.float32)), r"topk_weights: shape \[4, 3\] is invalid: must be \[4, 2\]"),
            (dict(x_scales=np.zeros((b, 2), np.int32)), r"x_scales: shape \[4, 2\] is invalid: must be \[4, 4\]"),
            (dict(x_scales=None), r"x_scales is required"),
            (dict(x=np.zeros((h, b), np.uint8).T), r"x is not contiguous"),
            (dict(x=np.zeros((300, h), np.uint8)), r"x: batch B = 300 is invalid: must be in \[1, 256\]"),
            (dict(out=np.zeros((b, h), np.float32)), r"out: dtype float32 is invalid: must be bfloat16"),
            # Right dtypes and shapes, but host memory: refused before any pointer is read.
            ({}, r"x is on cpu: it must be a CUDA tensor \(on cuda:0\)"),
        ]
        for replace, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(moejit.MoejitError, message):
                    call(**replace)
        # A caller's workspace: a uint8 vector of at least workspace_bytes, on the layer's device.
        from moejit.layer import workspace_pointer
        with self.assertRaisesRegex(moejit.MoejitError, r"workspace: shape \[100\] is invalid: must be \[n\] with n >= 4096"):
            workspace_pointer(np.zeros(100, np.uint8), 4096, 0)
        with self.assertRaisesRegex(moejit.MoejitError, r"workspace: dtype float32 is invalid: must be uint8"):
            workspace_pointer(np.zeros(4096, np.float32), 4096, 0)
        with self.assertRaisesRegex(moejit.MoejitError, r"workspace is on cpu"):
            workspace_pointer(np.zeros(4096, np.uint8), 4096, 0)
        # Without `out`, x is checked before its batch sizes the allocation (no GPU needed to get there).
        layer = moejit.MoeLayer.__new__(moejit.MoeLayer)
        layer.config, layer.device, layer.input_bf16 = self.cfg, 0, False
        with self.assertRaisesRegex(moejit.MoejitError, r"x: shape \[512\] is invalid: must be \[B, 512\]"):
            layer(np.zeros(h, np.uint8), good["topk_ids"], good["topk_weights"])
        with self.assertRaisesRegex(moejit.MoejitError, r"x is required"):
            layer(None, good["topk_ids"], good["topk_weights"])
        # A BF16-input layer takes BF16 x and no scales.
        with self.assertRaisesRegex(moejit.MoejitError, r"x: dtype uint8 is invalid: must be bfloat16"):
            call(input_bf16=True, x_scales=None)
        with self.assertRaisesRegex(moejit.MoejitError, r"x_scales: a layer with input_bf16 quantizes x itself"):
            call(input_bf16=True)


class Packing(unittest.TestCase):
    def test_pack_weights_offline(self):
        cfg = moejit.config(SMALL)
        rng = np.random.default_rng(3)
        w = {}
        for name, shape in moejit.weight_shapes(cfg).items():
            w[name] = (rng.integers(0, 256, shape, dtype=np.uint8) if name.startswith("w")
                       else rng.integers(118, 123, shape, dtype=np.uint8))
        p = moejit.pack_weights(SMALL, **w)
        self.assertEqual(len(p["w1"]), w["w1"].nbytes + w["s1"].nbytes)
        self.assertEqual(len(p["w2"]), w["w2"].nbytes + w["s2"].nbytes)
        self.assertEqual(p["top_scale_code"], int(max(w["s1"].max(), w["s2"].max())))
        self.assertEqual(p["atom"], moejit.plan(SMALL, 1)["atom"])
        # Codes 118-122 only: no block of scale code 0; one with a nonzero value makes the flag.
        self.assertFalse(p["subnormal_weight_scales"])
        s1 = w["s1"].copy()
        s1.reshape(-1)[0] = 0
        w1 = w["w1"].copy()
        w1.reshape(-1)[:16] = 0
        self.assertFalse(moejit.pack_weights(SMALL, **{**w, "s1": s1, "w1": w1})["subnormal_weight_scales"])
        w1.reshape(-1)[15] = 0x10  # the block's last byte: code 1 (0.5) in its high nibble
        self.assertTrue(moejit.pack_weights(SMALL, **{**w, "s1": s1, "w1": w1})["subnormal_weight_scales"])
        self.assertNotEqual(moejit.pack_weights(SMALL, path="exact", **w)["w1"], p["w1"])
        with self.assertRaisesRegex(moejit.MoejitError, r"s2: 32767 bytes are invalid: must be 32768 \(\[8\]\[512\]\[8\] uint8\)"):
            moejit.pack_weights(SMALL, **{**w, "s2": w["s2"].reshape(-1)[:-1]})
        self.assertEqual(field_of(lambda: moejit.pack_weights(SMALL, **{**w, "w1": w["w1"].astype(np.float32)})), "w1")
        # A layer over packed weights takes them on the GPU only.
        with self.assertRaisesRegex(moejit.MoejitError, r"w1 is on cpu"):
            moejit.MoeLayer.from_packed(SMALL, p, np.frombuffer(p["w1"], np.uint8), np.frombuffer(p["w2"], np.uint8))
        # ... and for the configuration they were packed for: twice the experts would read past them.
        host = (np.frombuffer(p["w1"], np.uint8), np.frombuffer(p["w2"], np.uint8))
        with self.assertRaisesRegex(moejit.MoejitError, r"packed: packed for another configuration: experts 8 "
                                                        r"\(the layer's: 16\)"):
            moejit.MoeLayer.from_packed({**SMALL, "experts": 16}, p, *host)


class Version(unittest.TestCase):
    def test_version(self):
        self.assertRegex(moejit.__version__, r"^\d+\.\d+\.\d+$")


if __name__ == "__main__":
    unittest.main()

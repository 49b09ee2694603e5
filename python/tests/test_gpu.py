"""The Python package on an H200 (skipped without torch and an sm_90 GPU):
the example block against its torch reference, torch.compile(fullgraph=True),
a CUDA graph of two layers, and a caller's workspace shared by two layers.

    python3 -m unittest discover -s python/tests -v      (tools/gpu_session.sh python)
"""

import os
import sys
import unittest

try:
    import torch
    _GPU = torch.cuda.is_available() and torch.cuda.get_device_capability(0) == (9, 0)
except ImportError:
    torch = None
    _GPU = False

_EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


@unittest.skipUnless(_GPU, "needs torch and an sm_90 GPU (skipped)")
class OnTheGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.abspath(_EXAMPLES))
        import moejit
        import torch_moe_block as ex
        cls.moejit, cls.ex = moejit, ex
        cls.config = moejit.config({"name": "py-gpu", "experts": 16, "top_k": 4, "hidden": 1024,
                                    "intermediate": 512})

    def hidden(self, batch, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(batch, self.config["hidden"], generator=g) * 2.0).to(torch.bfloat16).cuda()

    def test_block_matches_the_torch_reference(self):
        for batch in (1, 8, 64, 256):
            with self.subTest(batch=batch):
                c = self.ex.check(self.config, batch, seed=batch)
                print(f"B={batch}: cosine {c:.7f}")
                self.assertGreaterEqual(c, 0.99999)

    def test_torch_compile_fullgraph(self):
        block = self.ex.MoeBlock(self.config, self.ex.random_checkpoint(self.config, 7), 7)
        h = self.hidden(8, 7)
        eager = block(h)
        compiled = torch.compile(block, fullgraph=True)
        got = compiled(h)
        torch.cuda.synchronize()
        # The op is one opaque node; the router around it may round differently when compiled.
        self.assertEqual(got.shape, eager.shape)
        self.assertEqual(got.dtype, torch.bfloat16)
        self.assertGreaterEqual(self.ex.cosine(got, eager), 0.99999)

    def test_cuda_graph_of_two_layers_replays_like_eager(self):
        blocks = [self.ex.MoeBlock(self.config, self.ex.random_checkpoint(self.config, 11 + i), 11 + i)
                  for i in range(2)]
        h = self.hidden(16, 3)

        def step(x):
            return blocks[1](blocks[0](x))

        eager = step(h)  # warm: kernels built, graphs made
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        static_in = h.clone()
        with torch.cuda.graph(graph):
            static_out = step(static_in)
        for _ in range(10):
            graph.replay()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(static_out, eager))

    def test_two_layers_share_a_callers_workspace(self):
        moejit = self.moejit
        from moejit.mx import quantize_mxfp8
        layers = [moejit.MoeLayer(self.config, **self.ex.random_checkpoint(self.config, 21 + i)) for i in range(2)]
        ws = torch.zeros(layers[0].workspace_bytes, dtype=torch.uint8, device="cuda")
        h = self.hidden(8, 5)
        x_q, x_s = quantize_mxfp8(h)
        ids = torch.randint(0, self.config["experts"], (8, self.config["top_k"]), dtype=torch.int32, device="cuda")
        w = torch.full((8, self.config["top_k"]), 0.25, dtype=torch.float32, device="cuda")
        own = [layer(x_q, ids, w, x_scales=x_s) for layer in layers]
        for _ in range(3):
            shared = [layer(x_q, ids, w, x_scales=x_s, workspace=ws) for layer in layers]
            for a, b in zip(own, shared):
                self.assertTrue(torch.equal(a, b))

    def test_a_freed_layers_handle_names_no_layer(self):
        from moejit import torch_ops
        layer = self.moejit.MoeLayer(self.config, **self.ex.random_checkpoint(self.config, 31))
        handle = torch_ops.register(layer)
        del layer  # the registry holds it weakly: its owner decides its life
        h = self.hidden(2, 1)
        from moejit.mx import quantize_mxfp8
        x_q, x_s = quantize_mxfp8(h)
        ids = torch.zeros(2, self.config["top_k"], dtype=torch.int32, device="cuda")
        w = torch.ones(2, self.config["top_k"], dtype=torch.float32, device="cuda")
        with self.assertRaisesRegex(ValueError, f"handle {handle} names no live layer"):
            torch.ops.moejit.moe(handle, x_q, x_s, ids, w)

    def test_the_example_exits_clean(self):
        # nanobind reports native objects still alive at interpreter exit: none may be.
        import subprocess
        r = subprocess.run([sys.executable, os.path.join(_EXAMPLES, "torch_moe_block.py"), "--batch", "4"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("cosine", r.stdout)
        self.assertNotIn("leaked", r.stderr)


if __name__ == "__main__":
    unittest.main()

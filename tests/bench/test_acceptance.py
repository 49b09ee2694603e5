"""bench/acceptance.py over bench logs shaped as moejit_bench_moe and the lease scripts write them."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import acceptance  # noqa: E402

NEW_HEADER = ("model                  B experts   floor_us  median_us  %floor   disp_us   comp_us    fin_us  sm_MHz  "
              "tile_n/stages xCTAs groups act-warps schedule pdl paired frame")
OLD_HEADER = ("model            B experts   floor_us  median_us  %floor   disp_us   comp_us    fin_us  "
              "tile_n/stages xCTAs")


def new_row(model, b, floor, median):
    return (f"{model:<20} {b:>4} {8.0:>7} {floor:>10.1f} {median:>10.1f} {100 * floor / median:>6.1f}%"
            f" 6.0 50.0 4.0 1980  8/8 x1 g3 a3 units pdl paired -")


def old_row(model, b, floor, median):
    return (f"{model:<14} {b:>4} {8.0:>7} {floor:>10.1f} {median:>10.1f} {100 * floor / median:>6.1f}%"
            " 9.0 80.0 4.0  16/8 x3")


def log(device, commit, rows, path="fast", bandwidth=4254):
    """One run as the lease scripts write it; path None: the old bench's table (no path, fewer columns)."""
    if path is None:
        bench = [f"device {device} (132 SMs), copy bandwidth {bandwidth} GB/s (read+write)", OLD_HEADER]
    else:
        bench = [f"device {device} (132 SMs), copy bandwidth {bandwidth} GB/s (read+write), SM clock 1980 MHz, "
                 f"path {path}, recipe w4a8-mx", NEW_HEADER]
    return "\n".join([f"# date: 2026-12-06T00:00:00Z  commit: {commit}  device: {device}",
                      "# command: moejit_bench_moe --model glm5.2", *bench, *rows,
                      "  trace over 132 compute CTAs (us from the first entry; waits in us): min / median / max",
                      "    entry                             0.00      0.06      0.45", "rc=0", ""])


class Acceptance(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = acceptance.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def fast_runs(self, device="NVIDIA H200"):
        # B = 1 at 70% (short by 5), B = 4 at 75% exactly (met), B = 8 at 84% in one run only (short by 1).
        one = [new_row("glm5.2", 1, 35.0, 50.0), new_row("glm5.2", 4, 75.0, 100.0), new_row("glm5.2", 8, 90.0, 100.0)]
        two = [new_row("glm5.2", 1, 35.0, 50.0), new_row("glm5.2", 4, 75.0, 100.0), new_row("glm5.2", 8, 84.0, 100.0)]
        return (self.write("run1.log", log(device, "abc1234", one)),
                self.write("run2.log", log(device, "abc1234", two)))

    def test_fast_bar_every_run(self):
        rc, out, _ = self.run_main("fast", "--json", *self.fast_runs())
        self.assertEqual(rc, 1)
        rows = {r["B"]: r for r in json.loads(out)["rows"]}
        self.assertEqual(rows[1]["short"], 5.0)
        self.assertFalse(rows[1]["met"])
        self.assertTrue(rows[4]["met"])
        self.assertEqual(rows[8]["percent"], [90.0, 84.0])
        self.assertEqual((rows[8]["bar"], rows[8]["short"], rows[8]["met"]), (85.0, 1.0, False))

    def test_fast_all_met_exits_zero_and_prints_the_table(self):
        rows = [new_row("dsv4.1-flash", 2, 80.0, 100.0), new_row("dsv4.1-flash", 16, 86.0, 100.0)]
        one = self.write("ok1.log", log("NVIDIA H200", "abc1234", rows))
        two = self.write("ok2.log", log("NVIDIA H200", "abc1234", rows))
        rc, out, _ = self.run_main("fast", one, two)
        self.assertEqual(rc, 0)
        self.assertIn("| dsv4.1-flash | 16 | 86.0 / 86.0 | 85 | - |", out)
        self.assertIn("2 of 2 points meet it", out)

    def test_fast_point_missing_from_a_run_misses(self):
        # Run 2 was cut off before DSV4.1-Flash (a timeout): its points are not met, though run 1's pass.
        one = self.write("a.log", log("NVIDIA H200", "c", [new_row("glm5.2", 8, 90.0, 100.0),
                                                           new_row("dsv4.1-flash", 8, 90.0, 100.0)]))
        two = self.write("b.log", log("NVIDIA H200", "c", [new_row("glm5.2", 8, 90.0, 100.0)]))
        rc, out, _ = self.run_main("fast", one, two)
        self.assertEqual(rc, 1)
        self.assertIn("| dsv4.1-flash | 8 | 90.0 / - | 85 | not in run 2 |", out)
        self.assertIn("1 of 2 points meet it", out)

    def test_fast_needs_two_runs(self):
        rc, _, err = self.run_main("fast", self.fast_runs()[0])
        self.assertEqual(rc, 2)
        self.assertIn("two runs", err)

    def test_a_sweep_in_one_log_is_refused(self):
        # --token-frame off,on prints two rows a point: they are two layouts, not two runs.
        sweep = self.write("sweep.log", log("NVIDIA H200", "c", [new_row("glm5.2", 1, 35.0, 50.0),
                                                                 new_row("glm5.2", 1, 36.0, 50.0)]))
        rc, _, err = self.run_main("fast", sweep, sweep)
        self.assertEqual(rc, 2)
        self.assertIn("glm5.2 B = 1 twice", err)

    def test_another_card_is_refused_unless_asked(self):
        runs = self.fast_runs("NVIDIA H100 80GB HBM3")
        rc, _, err = self.run_main("fast", *runs)
        self.assertEqual(rc, 2)
        self.assertIn("NVIDIA H100 80GB HBM3", err)
        rc, _, _ = self.run_main("fast", "--any-device", *runs)
        self.assertEqual(rc, 1)

    def test_two_cards_are_refused(self):
        one = self.write("h200.log", log("NVIDIA H200", "c", [new_row("glm5.2", 8, 90.0, 100.0)]))
        two = self.write("h100.log", log("NVIDIA H100 80GB HBM3", "c", [new_row("glm5.2", 8, 90.0, 100.0)]))
        rc, _, err = self.run_main("fast", "--any-device", one, two)
        self.assertEqual(rc, 2)
        self.assertIn("one card's logs", err)

    def old_and_exact(self, exact_rows, exact_path="exact", bandwidth=4254):
        old = self.write("old.log", log("NVIDIA H200", "75c91f4", [old_row("dsv4.1-flash", 2, 50.0, 100.0),
                                                                    old_row("dsv4.1-flash", 4, 50.0, 100.0)],
                                        path=None))
        return old, self.write("exact.log", log("NVIDIA H200", "abc1234", exact_rows, exact_path, bandwidth))

    def test_exact_against_old_per_byte(self):
        # Old: 100 us over a floor of 50. Exact at B = 2: 103 us over 50 (3% slower: missed); at B = 4, 103 us
        # over 51.5 (the run touched more experts: the same time per byte: met).
        old, exact = self.old_and_exact([new_row("dsv4.1-flash", 2, 50.0, 103.0),
                                         new_row("dsv4.1-flash", 4, 51.5, 103.0)])
        rc, out, _ = self.run_main("exact", "--json", "--old", old, exact)
        self.assertEqual(rc, 1)
        body = json.loads(out)
        rows = {r["B"]: r for r in body["rows"]}
        self.assertAlmostEqual(rows[2]["ratio"], 1.03, places=4)
        self.assertFalse(rows[2]["met"])
        self.assertAlmostEqual(rows[4]["ratio"], 1.0, places=4)
        self.assertTrue(rows[4]["met"])
        self.assertEqual(body["commits"], ["75c91f4", "abc1234"])

    def test_exact_bytes_not_bandwidth(self):
        # The exact run measured 2% less copy bandwidth, so its floor reads 2% longer for the same bytes: 102 us
        # over a floor of 51 is 2% slower than 100 over 50 per byte, not level with it.
        old, exact = self.old_and_exact([new_row("dsv4.1-flash", 2, 51.0, 102.0),
                                         new_row("dsv4.1-flash", 4, 51.0, 102.0)], bandwidth=4254 * 50 / 51)
        rc, out, _ = self.run_main("exact", "--json", "--old", old, exact)
        self.assertAlmostEqual(json.loads(out)["rows"][0]["ratio"], 1.02, places=3)

    def test_exact_point_missing_on_one_side_misses(self):
        old, exact = self.old_and_exact([new_row("dsv4.1-flash", 2, 50.0, 100.0)])
        rc, out, _ = self.run_main("exact", "--old", old, exact)
        self.assertEqual(rc, 1)
        self.assertIn("| dsv4.1-flash | 4 | | | | no: not measured (exact) |", out)

    def test_exact_refuses_a_fast_log(self):
        old, fast = self.old_and_exact([new_row("dsv4.1-flash", 2, 50.0, 90.0)], exact_path="fast")
        rc, _, err = self.run_main("exact", "--old", old, fast)
        self.assertEqual(rc, 2)
        self.assertIn("ran path fast, not exact", err)

    def test_other_models_are_left_out(self):
        # The exact run also timed gpt-oss-120b, which the old bench did not: not a point of the acceptance.
        old, exact = self.old_and_exact([new_row("dsv4.1-flash", 2, 50.0, 100.0),
                                         new_row("dsv4.1-flash", 4, 50.0, 100.0),
                                         new_row("gpt-oss-120b", 2, 50.0, 100.0)])
        rc, out, _ = self.run_main("exact", "--old", old, exact)
        self.assertEqual((rc, "gpt-oss" in out), (0, False))
        rc, out, _ = self.run_main("exact", "--models", "dsv4.1-flash,gpt-oss-120b", "--old", old, exact)
        self.assertEqual(rc, 1)
        self.assertIn("| gpt-oss-120b | 2 | | | | no: not measured (old) |", out)
        rc, _, err = self.run_main("exact", "--models", "glm5.2", "--old", old, exact)
        self.assertEqual(rc, 2)
        self.assertIn("no rows of glm5.2", err)

    def test_exact_needs_old(self):
        old, exact = self.old_and_exact([new_row("dsv4.1-flash", 2, 50.0, 100.0)])
        rc, _, err = self.run_main("exact", exact)
        self.assertEqual(rc, 2)
        self.assertIn("--old", err)

    def test_a_log_without_rows_is_an_error(self):
        path = self.write("empty.log", "# date: 2026-12-06T00:00:00Z  commit: x  device: NVIDIA H200\nrc=124\n")
        rc, _, err = self.run_main("fast", path, path)
        self.assertEqual(rc, 2)
        self.assertIn("no moejit_bench_moe rows", err)


if __name__ == "__main__":
    unittest.main()

"""bench/ncu_sass.py over a small SASS page shaped as ncu exports it (a kernel-name row, then the header)."""
import csv
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import ncu_sass  # noqa: E402

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
          "L2 Theoretical Sectors Global", "L2 Theoretical Sectors Global Excessive",
          "stall_long_sb", "stall_math", "stall_long_sb (Not Issued)"]
ROWS = [
    ["0x10", "@!P0  BRA 0x40", "60", "100", "", "", "58", "2", "50"],
    ["0x20", "LOP3.LUT R1, R2, 0x9c, RZ, 0xc0, !PT", "30", "300", "", "", "", "30", ""],
    ["0x30", "FFMA R3, R4, R5, R3", "10", "100", "", "", "", "10", ""],
    ["0x40", "STG.E.128 desc[UR12][R6.64], R8", "0", "0", "64", "32", "", "", ""],
]


class NcuSass(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "page.csv")
        with open(self.path, "w", newline="") as f:
            w = csv.writer(f, quoting=csv.QUOTE_ALL)
            w.writerow(["Kernel Name", "moejit_moe_compute"])
            w.writerow(HEADER)
            w.writerows(ROWS)

    def tearDown(self):
        self.dir.cleanup()

    def run_json(self, *args):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(ncu_sass.main([*args, self.path, "--json"]), 0)
        return json.loads(out.getvalue())[self.path]

    def test_stalls_share_by_reason_and_line(self):
        r = self.run_json("stalls")
        self.assertEqual(r["samples"], 100)
        self.assertEqual(r["by_reason_pct"], {"math": 42.0, "long_sb": 58.0})  # "(Not Issued)" columns left out
        self.assertEqual([l["address"] for l in r["top_lines"]], ["0x10", "0x20", "0x30"])
        self.assertEqual(r["top_lines"][0]["pct"], 60.0)

    def test_mix_counts_opcodes_without_predicates_or_modifiers(self):
        r = self.run_json("mix")
        self.assertEqual(r["executed"], 500)
        self.assertEqual(r["by_opcode_pct"], {"LOP3": 60.0, "BRA": 20.0, "FFMA": 20.0})

    def test_sectors_by_line(self):
        r = self.run_json("sectors")
        self.assertEqual((r["sectors"], r["excessive"]), (64, 32))
        self.assertEqual(r["top_lines"][0]["source"].split()[0], "STG.E.128")

    def test_a_file_that_is_not_a_sass_page_is_refused_by_name(self):
        other = os.path.join(self.dir.name, "other.csv")
        with open(other, "w") as f:
            f.write("a,b\n1,2\n")
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(ncu_sass.main(["mix", other]), 1)
        self.assertIn("other.csv", err.getvalue())
        self.assertIn("not a SASS page", err.getvalue())

    def test_top_below_one_is_refused(self):
        with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
            ncu_sass.main(["mix", self.path, "--top", "0"])
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()

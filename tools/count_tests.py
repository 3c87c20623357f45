"""Counts test cases in Bazel's JUnit XML files and prints the closing line "N passed, M failed, K skipped".
Exit status: non-zero when any case or target failed (bazel_rc not 0), or when there was nothing to count (no
test.xml under the test logs: a run that tested nothing is not a pass)."""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def main(testlogs: str, bazel_rc: int) -> int:
    passed = failed = skipped = 0
    xmls = glob.glob(os.path.join(testlogs, "**", "test.xml"), recursive=True) if testlogs else []
    if not xmls:
        print(f"no test.xml under the test logs {testlogs!r}: nothing ran or the logs were not found")
        failed = 1
    for xml in xmls:
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError:
            failed += 1
            continue
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None or case.get("result") == "skipped" or case.get("status") == "notrun":
                skipped += 1
            else:
                passed += 1
    if bazel_rc != 0 and failed == 0:
        failed = 1  # a target failed without case-level output (build error, crash, timeout)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if (bazel_rc == 0 and failed == 0) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))

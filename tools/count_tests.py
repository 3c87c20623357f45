"""Counts test cases in Bazel's JUnit XML files and prints the closing line "N passed, M failed, K skipped".
Exit status: non-zero when any case or target failed (bazel_rc not 0), or when there was nothing to count (no
test.xml under the test logs: a run that tested nothing is not a pass).

  count_tests.py TESTLOGS BAZEL_RC [LABELS_FILE]

LABELS_FILE (one test label a line, e.g. from `bazel query 'tests(//...)'`): only those targets' logs are counted, so
the logs a renamed or deleted target left in a reused output base never inflate the count."""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def label_dir(testlogs: str, label: str) -> str:
    """//pkg/sub:name -> TESTLOGS/pkg/sub/name (where Bazel writes that target's test.xml, shards and runs below)."""
    pkg, _, name = label.lstrip("/").partition(":")
    return os.path.join(testlogs, pkg, name)


def find_xmls(testlogs: str, labels: list | None) -> list:
    if not testlogs:
        return []
    if labels is None:
        return glob.glob(os.path.join(testlogs, "**", "test.xml"), recursive=True)
    xmls = []
    for label in labels:
        d = label_dir(testlogs, label)
        xmls += [os.path.join(d, "test.xml")] if os.path.isfile(os.path.join(d, "test.xml")) else []
        xmls += glob.glob(os.path.join(d, "*", "test.xml"))  # shard_N_of_M/, run_N_of_M/
    return xmls


def main(testlogs: str, bazel_rc: int, labels: list | None = None) -> int:
    passed = failed = skipped = 0
    xmls = find_xmls(testlogs, labels)
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
    labels = None
    if len(sys.argv) > 3:
        with open(sys.argv[3]) as f:
            labels = [line.strip() for line in f if line.strip().startswith("//")]
    sys.exit(main(sys.argv[1], int(sys.argv[2]), labels))

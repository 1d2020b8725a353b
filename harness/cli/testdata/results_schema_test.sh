#!/bin/sh
# results.json against docs/results.schema.json, with a maintained validator
# (python3-jsonschema): a real CPU run (one cell passes, one fails, so both
# shapes of a cell are present) validates and carries schema_version 1; the
# same file with a field removed or an outcome misspelled does not, so the
# schema checks something. Skips (77) without the validator.
# Usage: results_schema_test.sh NSA_HARNESS_BINARY WORK_DIR   (run from the source tree)
set -u
bin=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c "import jsonschema" 2> /dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with jsonschema (Debian: python3-jsonschema; scripts/install-deps.sh installs it)"; exit 77; }

"$bin" run harness/cli/testdata/rerun.yaml --out "$work/run" > "$work/run.out" 2> "$work/run.err"
rc=$?
[ $rc -eq 1 ] || { cat "$work/run.err"; fail "run: exit $rc, want 1"; }
"$py" - docs/results.schema.json "$work/run/results.json" << 'PY' || fail "results.json against the schema"
import copy, json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
v = cls(schema)
errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
for e in errors:
    print("invalid at /%s: %s" % ("/".join(map(str, e.path)), e.message))
assert not errors, "%d error(s)" % len(errors)
assert doc["schema_version"] == 1
assert {c["outcome"] for c in doc["cells"]} == {"pass", "fail"}
broken = copy.deepcopy(doc); del broken["schema_version"]
assert not v.is_valid(broken), "a file without schema_version validates"
broken = copy.deepcopy(doc); broken["cells"][0]["outcome"] = "passed"
assert not v.is_valid(broken), "a misspelled outcome validates"
broken = copy.deepcopy(doc); broken["cells"][1]["undocumented"] = 1
assert not v.is_valid(broken), "an undocumented cell field validates"
print("ok: %s validates (%s); broken copies do not" % (sys.argv[2], cls.__name__))
PY
echo ok

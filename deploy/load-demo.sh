#!/usr/bin/env bash
# Loads the demo datasets of deploy/demo-data/ into a running dpqd, each with its privacy unit, the
# suggested public bounds of deploy/demo-data/README.md and a budget. A dataset that already exists
# is left alone (its budget is set only while it is still zero), so this is safe to run again.
#
# Environment: DPQ_SERVER, DPQ_TOKEN (an admin token), DPQCTL (default build/bin/dpqctl),
#              DPQ_DEMO_EPSILON (default 3), DPQ_DEMO_DELTA (default 1e-6): the budget per dataset.
#
# The bounds below were picked after looking at the data (see the data README): fine for a demo, but
# in a real release public bounds must be fixed without looking at the data.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="$ROOT/deploy/demo-data"
DPQCTL="${DPQCTL:-$ROOT/build/bin/dpqctl}"
EPSILON="${DPQ_DEMO_EPSILON:-3}"
DELTA="${DPQ_DEMO_DELTA:-1e-6}"
: "${DPQ_TOKEN:?DPQ_TOKEN must hold an admin token}"

log() { printf '[load-demo] %s\n' "$*"; }

# load NAME PRIVACY_UNIT COL=LO:HI...
load() {
  local name="$1" unit="$2"
  shift 2
  local out bounds=()
  for b in "$@"; do bounds+=(--bounds "$b"); done

  if out="$("$DPQCTL" --json dataset show "$name" 2>/dev/null)"; then
    log "$name: already loaded"
  elif jq -e '.error.code == "NOT_FOUND"' >/dev/null 2>&1 <<<"$out"; then
    out="$("$DPQCTL" --json dataset create "$name" --csv "$DATA/$name.csv" \
             --privacy-unit "$unit" "${bounds[@]}")" || { echo "$out" >&2; return 1; }
    log "$name: loaded $(jq -r .rows_loaded <<<"$out") rows (privacy unit $unit)"
  else
    echo "$out" >&2
    log "$name: cannot check whether the dataset exists"
    return 1
  fi

  out="$("$DPQCTL" --json budget show "$name")"
  if jq -e '.epsilon_total == 0' >/dev/null <<<"$out"; then
    "$DPQCTL" --json budget set "$name" --epsilon "$EPSILON" --delta "$DELTA" >/dev/null
    log "$name: budget set to epsilon $EPSILON, delta $DELTA"
  fi
}

# SLID, Ontario 1994: one row per respondent.
load slid person_id wages=0:100 education=0:25 age=0:120

# Mayo Clinic PBC trial: one row per patient. Binary columns get 0:1 so their mean is a proportion;
# categorical codes (status, trt, stage) get no bounds.
load pbc patient_id time=0:5000 age=0:120 bili=0:50 chol=0:2000 albumin=0:6 copper=0:1000 \
  alk_phos=0:15000 ast=0:1000 trig=0:1000 platelet=0:1000 protime=0:30 edema=0:1 \
  ascites=0:1 hepato=0:1 spiders=0:1

# Colon cancer adjuvant trial: exactly TWO rows per patient (recurrence and death). Queries that
# count every row need --max-contributions 2 (the default K=1 keeps one row per patient).
load colon patient_id age=0:120 nodes=0:50 time=0:5000 sex=0:1 obstruct=0:1 perfor=0:1 \
  adhere=0:1 status=0:1 surg=0:1 node4=0:1

# US professors' nine-month salaries 2008-09: one row per faculty member.
load salaries person_id salary=0:300000 yrs_since_phd=0:70 yrs_service=0:70

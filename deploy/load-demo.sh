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

# load NAME PRIVACY_UNIT "COL=TYPE ..." COL=LO:HI...
# Every column's type is declared (analysts see the schema; a type inferred from the rows would
# reveal something of them): integer, double or text.
load() {
  local name="$1" unit="$2" types="$3"
  shift 3
  local out bounds=() type_flags=() t
  for b in "$@"; do bounds+=(--bounds "$b"); done
  for t in $types; do type_flags+=(--type "$t"); done

  if out="$("$DPQCTL" --json dataset show "$name" 2>/dev/null)"; then
    log "$name: already loaded"
  elif jq -e '.error.code == "NOT_FOUND"' >/dev/null 2>&1 <<<"$out"; then
    out="$("$DPQCTL" --json dataset create "$name" --csv "$DATA/$name.csv" \
             --privacy-unit "$unit" "${type_flags[@]}" "${bounds[@]}")" || { echo "$out" >&2; return 1; }
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
load slid person_id "person_id=integer wages=double education=double age=integer sex=text \
  language=text" wages=0:100 education=0:25 age=0:120

# Mayo Clinic PBC trial: one row per patient. Binary columns get 0:1 so their mean is a proportion;
# categorical codes (status, trt, stage) get no bounds.
load pbc patient_id "patient_id=integer time=integer status=integer trt=integer age=double \
  sex=text ascites=integer hepato=integer spiders=integer edema=double bili=double chol=integer \
  albumin=double copper=integer alk_phos=double ast=double trig=integer platelet=integer \
  protime=double stage=integer" time=0:5000 age=0:120 bili=0:50 chol=0:2000 albumin=0:6 copper=0:1000 \
  alk_phos=0:15000 ast=0:1000 trig=0:1000 platelet=0:1000 protime=0:30 edema=0:1 \
  ascites=0:1 hepato=0:1 spiders=0:1

# Colon cancer adjuvant trial: exactly TWO rows per patient (recurrence and death). Queries that
# count every row need --max-contributions 2 (the default K=1 keeps one row per patient).
load colon patient_id "patient_id=integer study=integer rx=text sex=integer age=integer \
  obstruct=integer perfor=integer adhere=integer nodes=integer status=integer differ=integer \
  extent=integer surg=integer node4=integer time=integer etype=integer" age=0:120 nodes=0:50 time=0:5000 sex=0:1 obstruct=0:1 perfor=0:1 \
  adhere=0:1 status=0:1 surg=0:1 node4=0:1

# US professors' nine-month salaries 2008-09: one row per faculty member.
load salaries person_id "person_id=integer rank=text discipline=text yrs_since_phd=integer \
  yrs_service=integer sex=text salary=integer" salary=0:300000 yrs_since_phd=0:70 yrs_service=0:70

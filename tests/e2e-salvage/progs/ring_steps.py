# ring_steps.py: a gdb script (gdb -batch -x ring_steps.py PROGRAM) for tests/e2e-salvage/run's
# ring-steps cases. It runs PROGRAM under the runtime again and again, and kills it (SIGKILL,
# gdb's `kill`) with one of its threads stopped k instructions into the making of a ring
# header (librecord's rec_ring_hdr_init), k = 0, 1, ... until that thread is past the
# function's last instruction: every state a kill can leave the header in. A `rep` string
# instruction (the header's memset) and a call (snprintf) count as one step each. Run k
# records in STEPS_TOP/kNNN.
#
# Environment: STEPS_LIB (the runtime, preloaded), STEPS_TOP, STEPS_SITE (the function whose
# call of rec_ring_hdr_init is stepped: rec_thread_attach_fds, a ring made new (the first
# thread's: the pool is empty), or
# rec_ringpool_give, a spare ring given to a thread), STEPS_ARGS (PROGRAM's arguments; "@D"
# is replaced by the run's directory), STEPS_MAX (at most this many runs).
# Prints one line per run: "step K DIR in" or "step K DIR past", or "error: ..." on stderr.
import os
import sys

import gdb

LIB = os.environ["STEPS_LIB"]
TOP = os.environ["STEPS_TOP"]
SITE = os.environ["STEPS_SITE"]
ARGS = os.environ["STEPS_ARGS"]
MAX = int(os.environ.get("STEPS_MAX", "200"))
FN = "rec_ring_hdr_init"

for c in ("set confirm off", "set pagination off", "set breakpoint pending on",
          "set startup-with-shell off", "set print thread-events off",
          "set print inferior-events off", "set environment FLIGHTREC_NO_LIBCALL=1",
          "set environment LD_PRELOAD=" + LIB):
    gdb.execute(c, to_string=True)


def fn_at_pc():
    try:
        return gdb.execute("info symbol $pc", to_string=True).split()[0]
    except gdb.error:
        return ""


def stopped():
    try:
        gdb.selected_frame()
        return True
    except gdb.error:
        return False


def step_one():
    """one instruction of this thread (a rep instruction whole), the others held"""
    frame = gdb.selected_frame()
    pc = frame.pc()
    two = frame.architecture().disassemble(pc, count=2)
    if two[0]["asm"].startswith("rep") and len(two) > 1:
        gdb.execute("tbreak *%#x" % two[1]["addr"], to_string=True)
        gdb.execute("continue", to_string=True)
    else:
        gdb.execute("nexti", to_string=True)  # a call whole


for k in range(MAX):
    d = os.path.join(TOP, "k%03d" % k)
    os.makedirs(d)
    gdb.execute("set environment FLIGHTREC_DIR=" + d, to_string=True)
    for b in gdb.breakpoints() or []:
        b.delete()
    gdb.Breakpoint(SITE, internal=True)
    gdb.execute("run " + ARGS.replace("@D", d), to_string=True)
    if not stopped() or fn_at_pc() != SITE:
        sys.stderr.write("error: run %d: the program never reached %s\n" % (k, SITE))
        break
    for b in gdb.breakpoints() or []:
        b.delete()
    gdb.Breakpoint(FN, internal=True)
    gdb.execute("set scheduler-locking on", to_string=True)  # this thread only, from here
    gdb.execute("continue", to_string=True)
    if not stopped() or fn_at_pc() != FN:
        sys.stderr.write("error: run %d: %s made no ring header\n" % (k, SITE))
        break
    for b in gdb.breakpoints() or []:
        b.delete()
    past = False
    for i in range(k):
        step_one()
        if fn_at_pc() != FN:
            past = True
            break
    gdb.execute("set scheduler-locking off", to_string=True)
    gdb.execute("kill", to_string=True)
    print("step %d %s %s" % (k, d, "past" if past else "in"))
    sys.stdout.flush()
    if past:
        break

# gdb (Python) drives tests/handover_race.c through one interleaving of a
# consumer's handover with an emit in flight; see that file. Non-stop: the
# threads gdb does not hold keep running.
import threading

import gdb

gdb.execute("set non-stop on")
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set print thread-events off")
gdb.execute("set print inferior-events off")

held_bp = gdb.Breakpoint("stream_emit_full", internal=True)
walk_bp = gdb.Breakpoint("records_between", internal=True)
walk_bp.enabled = False
state = {"held": None, "walked": False, "exit": None}


def resume(num):
    gdb.execute("thread %d" % num, to_string=True)
    gdb.execute("continue &", to_string=True)


def on_stop(ev):
    if not isinstance(ev, gdb.BreakpointEvent):
        return
    if held_bp in ev.breakpoints and state["held"] is None:
        state["held"] = ev.inferior_thread.num
        held_bp.enabled = False
        walk_bp.enabled = True
        print("gdb: the producer's emit is held in stream_emit_full()", flush=True)
    elif walk_bp in ev.breakpoints:
        walk_bp.enabled = False
        state["walked"] = True
        print("gdb: the handover is about to walk the records; the held emit goes on", flush=True)
        resume(state["held"])
        num = ev.inferior_thread.num
        threading.Timer(0.5, lambda: gdb.post_event(lambda: resume(num))).start()


def finish():
    ok = state["held"] is not None and state["walked"]
    print("gdb: emit held: %s, handover walked over it: %s, exit status %s"
          % (state["held"] is not None, state["walked"], state["exit"]), flush=True)
    gdb.execute("quit %d" % (state["exit"] if ok else 2))


def on_exit(ev):
    state["exit"] = ev.exit_code if hasattr(ev, "exit_code") else 2
    gdb.post_event(finish)


gdb.events.stop.connect(on_stop)
gdb.events.exited.connect(on_exit)
# gdb's command loop, waiting on a stdin kept open by the caller, runs
# the events from here on; finish() ends it
gdb.execute("run &")

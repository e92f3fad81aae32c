# SPDX-License-Identifier: MIT
"""python3 -m evstream {tail,compare,info} ... (see docs/python.md)"""
import sys

USAGE = """usage: python3 -m evstream COMMAND ...
  tail PRODUCER [--cores LIST] [--events N] [--seconds S]
                              a live view of a producer's events, gaps and drops
  compare DUMP_A DUMP_B [--atol A] [--rtol R] [--pcc P]
                              golden compare of two evs-dump directories
                              (exit 0 match, 1 divergence, 2 bad input)
  info                        which implementation and library are in use
COMMAND --help for its options."""


def info():
    import evstream
    print("implementation: %s" % evstream.implementation)
    if evstream.native_error:
        print("native extension: not importable (%s)" % evstream.native_error)
    if evstream.implementation == "fallback":
        from evstream import _lib
        print("library: %s" % _lib.path)
    else:
        print("extension: %s" % evstream._impl.__file__)
    print("records held at once per stream: %d (peek_next %s)"
          % (evstream.MAX_HELD, "yes" if evstream.HAVE_PEEK_NEXT else "no"))
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    try:
        if cmd == "tail":
            from evstream._tail import main as run
        elif cmd == "compare":
            from evstream._compare import main as run
        elif cmd == "info":
            return info()
        else:
            print("python3 -m evstream: unknown command %r: allowed are tail, compare, info\n%s"
                  % (cmd, USAGE), file=sys.stderr)
            return 2
        return run(rest)
    except KeyboardInterrupt:
        # Ctrl-C where a command does not handle it (while it starts, or
        # during a compare): end quietly, as the shell reports SIGINT
        return 130


if __name__ == "__main__":
    sys.exit(main())

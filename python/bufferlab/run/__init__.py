"""Running a scenario: the scheduler (terminals, lines, parts), the contexts commands run in,
the programs a line can run, captures, queue traces and the engine wrapper."""

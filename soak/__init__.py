"""Long runs of a real hub: a soak at steady load, and the load it holds.

``python -m soak`` (``make soak``) starts ``aophub serve`` as a child process and drives it over
real WebSockets, one connection per session, each session running echo turns one after another
with a pause of about ``--soak-think`` (0.5 s) or ``--search-think`` (1 s) between them, varied
so that sessions do not march in step:

* the soak: ``--sessions`` sessions (64) for ``--minutes`` minutes (10), sampling the hub's RSS;
  it reports the RSS slope over the last half of the run and whether growth levelled off;
* the load held: on a fresh hub, the session count steps up (64, 128, 256, ...), each step held
  for ``--step-seconds``, until the p99 latency from RunTurn to the first delta exceeds
  ``--p99-ms`` (250 ms) or a turn fails; the highest step that held is the result.

Results go to ``soak/results/latest.json`` and a summary is printed. ``--quick`` is a smoke run
of a few seconds per phase.
"""

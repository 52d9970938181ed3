"""stub"""
from bench.context import Context, Skip
from bench.report import ScenarioResult
KEY = "B6"
TITLE = "stub"
BASELINE = "stub"
async def run(ctx: Context) -> ScenarioResult:
    raise Skip("not written yet")

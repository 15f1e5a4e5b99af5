// `svc run remote`: after a run's result line, its test results (docs/test-results.md) as one
// count line and its failures, read from the orchestrator like `svc tests --run`. Nothing is
// printed when no step reported tests, or when the orchestrator cannot answer (an older one).
import type { PlatformClient } from '../platform-client.ts';

export async function remoteTestLines(client: Pick<PlatformClient, 'runTests'>, runId: string): Promise<string[]> {
  let answer;
  try {
    answer = await client.runTests(runId);
  } catch {
    return [];
  }
  if (answer.view !== 'run' || answer.run.counts.total === 0) return [];
  const c = answer.run.counts;
  const lines = [`  tests: ${c.total} (${c.passed} passed, ${c.failed} failed, ${c.errored} errored, ${c.skipped} skipped${c.quarantined > 0 ? `, ${c.quarantined} quarantined` : ''})`];
  const failing = answer.run.results.filter((r) => r.status === 'failed' || r.status === 'errored');
  for (const r of failing.slice(0, 20)) {
    lines.push(`    ${r.status}${r.quarantined ? ' (quarantined)' : ''} [${r.jobName}] ${r.suite === '' ? r.name : `${r.suite} › ${r.name}`}${r.message === null ? '' : `: ${r.message.split('\n')[0]!.slice(0, 200)}`}`);
  }
  if (failing.length > 20) lines.push(`    … ${failing.length - 20} more (svc tests --run ${runId})`);
  return lines;
}

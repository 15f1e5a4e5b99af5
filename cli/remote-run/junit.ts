// `svc run remote --junit <file>`: one <testsuite> per fixture run (a workflow run of a fixture),
// one <testcase> per job; a failed job carries <failure>, a cancelled or skipped one <skipped>.
import type { RunView } from '../../schemas/wire/relay.ts';

export interface JunitRun {
  fixture: string;
  workflow: string;
  runId: string;
  run: RunView | null;
  /** Why there is no run detail (creation failed, no workflow matched). */
  error?: string;
}

function esc(text: string): string {
  // XML 1.0 allows no control characters but tab, LF and CR: they are dropped.
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function seconds(start: string | null, end: string | null): string {
  if (start === null || end === null) return '0';
  return (Math.max(0, Date.parse(end) - Date.parse(start)) / 1000).toFixed(3);
}

export function junitXml(runs: readonly JunitRun[]): string {
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>'];
  let tests = 0;
  let failures = 0;
  const suites: string[] = [];
  for (const r of runs) {
    const name = `${r.fixture} › ${r.workflow}`;
    const jobs = (r.run?.jobs ?? []).filter((j) => j.kind === 'job');
    const cases: string[] = [];
    let suiteFailures = 0;
    let skipped = 0;
    if (r.run === null) {
      suiteFailures = 1;
      cases.push(`    <testcase classname="${esc(name)}" name="(run)" time="0">\n      <failure message="${esc(r.error ?? 'no run')}"/>\n    </testcase>`);
    }
    for (const job of jobs) {
      const head = `    <testcase classname="${esc(name)}" name="${esc(job.displayName)}" time="${seconds(job.startedAt, job.finishedAt)}"`;
      if (job.status === 'failed') {
        suiteFailures += 1;
        cases.push(`${head}>\n      <failure message="${esc(job.reason ?? 'failed')}"/>\n    </testcase>`);
      } else if (job.status === 'cancelled' || job.status === 'skipped') {
        skipped += 1;
        cases.push(`${head}>\n      <skipped message="${esc(job.reason ?? job.status)}"/>\n    </testcase>`);
      } else {
        cases.push(`${head}/>`);
      }
    }
    const count = cases.length;
    tests += count;
    failures += suiteFailures;
    const time = r.run === null ? '0' : seconds(r.run.startedAt ?? r.run.createdAt, r.run.finishedAt);
    suites.push(
      `  <testsuite name="${esc(name)}" id="${esc(r.runId)}" tests="${count}" failures="${suiteFailures}" errors="0" skipped="${skipped}" time="${time}">\n` +
        `    <properties>\n      <property name="runId" value="${esc(r.runId)}"/>\n      <property name="status" value="${esc(r.run?.status ?? 'not created')}"/>\n    </properties>\n` +
        cases.join('\n') +
        (cases.length > 0 ? '\n' : '') +
        '  </testsuite>',
    );
  }
  lines.push(`<testsuites name="svc run remote" tests="${tests}" failures="${failures}">`);
  lines.push(...suites);
  lines.push('</testsuites>');
  return lines.join('\n') + '\n';
}

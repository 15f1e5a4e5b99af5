// `svc runs list [--limit N] [--status S] [--repository owner/name] [--workflow W] [--branch B] [--before <cursor>] [--json]`:
// the org's recent runs from the Platform's run index (docs/run-index.md). The relay answers from
// its own records, so this works while no orchestrator of the org is connected. Text: one row per
// run, newest first, then how to page on; `--json` prints the relay's answer `{ runs, nextBefore }`.
import { Flags } from '@oclif/core';
import { DEFAULT_RUN_LIST_LIMIT, MAX_RUN_LIST_LIMIT, RUN_STATUSES, type RunList, type RunSummary } from '../../../schemas/http/run-index.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { formatDuration } from '../../../core/durations.ts';

function took(run: RunSummary): string {
  if (run.finishedAt === null) return '';
  const ms = Date.parse(run.finishedAt) - Date.parse(run.startedAt ?? run.createdAt);
  if (!Number.isFinite(ms) || ms < 0) return '';
  return formatDuration(ms, '');
}

function jobs(run: RunSummary): string {
  const entries = Object.entries(run.jobs);
  if (entries.length === 0) return '-';
  const total = entries.reduce((n, [, count]) => n + count, 0);
  return `${total} (${entries.map(([status, count]) => `${count} ${status}`).join(', ')})`;
}

function notes(run: RunSummary): string {
  const out: string[] = [];
  if (run.parentRunId !== null) out.push(`re-run of ${run.parentRunId.slice(0, 8)}${run.triggeredBy ? ` by ${run.triggeredBy}` : ''}`);
  if (run.cancelledBy !== null) out.push(`cancelled by ${run.cancelledBy}`);
  if (run.lastRerunAt !== null) out.push(`re-run at ${run.lastRerunAt.slice(0, 19)}Z`);
  return out.join('; ');
}

const HEADINGS = ['RUN', 'STATUS', 'WORKFLOW', 'REPOSITORY', 'REF', 'EVENT', 'CREATED', 'TOOK', 'JOBS', 'NOTES'];

/** The table as lines: a heading row, then one row per run; columns padded to their widest cell. */
export function formatRunList(runs: readonly RunSummary[]): string[] {
  const rows = runs.map((r) => [
    r.runId,
    r.status,
    r.workflow,
    r.repository,
    (r.ref ?? '-').replace(/^refs\/heads\//, ''),
    r.eventName ?? '-',
    `${r.createdAt.slice(0, 19)}Z`,
    took(r) || '-',
    jobs(r),
    notes(r),
  ]);
  const widths = HEADINGS.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  return [HEADINGS, ...rows].map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

export default class RunsList extends SvcCommand {
  static override description = "List the org's recent runs from the Platform's run index (works while the orchestrator is down)";
  static override examples = [
    '<%= config.bin %> runs list',
    '<%= config.bin %> runs list --status failed --repository acme/app --limit 50',
    '<%= config.bin %> runs list --workflow ci --branch main',
    '<%= config.bin %> runs list --before "2026-01-31T12:00:00.000Z,0b7c5b0e-…"',
    '<%= config.bin %> runs list --json',
  ];
  static override flags = {
    limit: Flags.integer({ description: `how many runs (at most ${MAX_RUN_LIST_LIMIT})`, default: DEFAULT_RUN_LIST_LIMIT, min: 1, max: MAX_RUN_LIST_LIMIT }),
    status: Flags.string({ description: 'only runs with this status', options: [...RUN_STATUSES] }),
    repository: Flags.string({ description: 'only runs of this repository (owner/name)' }),
    workflow: Flags.string({ description: 'only runs of this workflow (its name)' }),
    branch: Flags.string({ description: 'only runs of this branch (main) or full ref (refs/tags/v1)' }),
    before: Flags.string({ description: 'the page before this cursor (the "nextBefore" a previous page printed) or ISO time' }),
  };

  async run(): Promise<RunList> {
    const { flags } = await this.parse(RunsList);
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const list = await client.listRuns({
      limit: flags.limit,
      ...(flags.status !== undefined ? { status: flags.status as (typeof RUN_STATUSES)[number] } : {}),
      ...(flags.repository !== undefined ? { repository: flags.repository } : {}),
      ...(flags.workflow !== undefined ? { workflow: flags.workflow } : {}),
      ...(flags.branch !== undefined ? { branch: flags.branch } : {}),
      ...(flags.before !== undefined ? { before: flags.before } : {}),
    });
    if (!this.jsonEnabled()) {
      if (list.runs.length === 0) this.log(flags.before === undefined ? `no runs of ${client.org} in the Platform's run index` : 'no more runs');
      else for (const line of formatRunList(list.runs)) this.log(line);
      if (list.nextBefore !== null) this.log(`more: svc runs list --before "${list.nextBefore}"`);
    }
    return list;
  }
}

// `svc logs search <text> [--repository --branch --workflow --job --status --since --until
// --limit --context --json]`: lines of the org's stored run logs containing the text (ignoring
// case), newest run first, each with its run, job and step and a few lines around it, like
// `grep -i -F -C` over every log (docs/log-search.md). Bad input is refused here with the same
// rules the relay applies, before anything is sent.
import { Args, Flags } from '@oclif/core';
import type { LogSearchAnswer, LogSearchHit } from '../../../schemas/wire/relay.ts';
import { LOG_SEARCH_CONTEXT_MAX, LOG_SEARCH_LIMIT_MAX } from '../../../schemas/wire/relay-log-search.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { LOG_SEARCH_DEFAULT_CONTEXT, LOG_SEARCH_DEFAULT_LIMIT, toLogSearchQuery } from '../../../core/log-search.ts';

const STATUSES = ['held', 'queued', 'running', 'completed', 'failed', 'cancelled', 'skipped'] as const;

/** One hit as text: a header naming where, then the context and the line (`>` marks it). */
export function hitLines(hit: LogSearchHit): string[] {
  const branch = hit.ref === null ? '' : ` ${hit.ref.replace(/^refs\/heads\//, '')}`;
  const step = hit.step === '' ? '' : ` › ${hit.step}`;
  return [
    `${hit.runId} ${hit.repository}${branch} ${hit.workflow} (${hit.runStatus}, ${hit.runCreatedAt}) › ${hit.job}${step}`,
    ...hit.before.map((l) => `    ${l}`),
    `  > ${hit.text}`,
    ...hit.after.map((l) => `    ${l}`),
  ];
}

export default class LogsSearch extends SvcCommand {
  static override description = "Search the stored logs of the org's runs for a text (a substring, ignoring case)";
  static override examples = [
    '<%= config.bin %> logs search "connection refused"',
    '<%= config.bin %> logs search ECONNRESET --repository acme/app --branch main --since 7d',
    '<%= config.bin %> logs search "exit code 137" --workflow ci --job test --status failed --json',
  ];
  static override args = { text: Args.string({ description: 'the text to find (at least 3 letters or digits in a row, at most 200 characters)', required: true }) };
  static override flags = {
    repository: Flags.string({ description: 'only runs of this repository (owner/name)' }),
    branch: Flags.string({ description: 'only runs of this branch (main, or refs/heads/main; a pull request matches its head branch)' }),
    workflow: Flags.string({ description: 'only runs of this workflow' }),
    job: Flags.string({ description: 'only this job (its name or display name)' }),
    status: Flags.string({ description: 'only runs with this status', options: [...STATUSES] }),
    since: Flags.string({ description: 'runs created at or after: an ISO date or time (2026-12-01, 2026-12-01T10:00Z) or an age (30m, 12h, 7d)' }),
    until: Flags.string({ description: 'runs created before: an ISO date or time or an age' }),
    limit: Flags.integer({ description: `lines to show (at most ${LOG_SEARCH_LIMIT_MAX})`, default: LOG_SEARCH_DEFAULT_LIMIT, min: 1, max: LOG_SEARCH_LIMIT_MAX }),
    context: Flags.integer({ char: 'C', description: `lines shown before and after each match (at most ${LOG_SEARCH_CONTEXT_MAX})`, default: LOG_SEARCH_DEFAULT_CONTEXT, min: 0, max: LOG_SEARCH_CONTEXT_MAX }),
  };

  async run(): Promise<LogSearchAnswer> {
    const { args, flags } = await this.parse(LogsSearch);
    const query = toLogSearchQuery({ ...flags, q: args.text, status: flags.status as (typeof STATUSES)[number] | undefined });
    const params = new URLSearchParams({ q: query.text, limit: String(query.limit), context: String(query.context) });
    for (const key of ['repository', 'branch', 'workflow', 'job', 'status', 'since', 'until'] as const) {
      const value = query[key];
      if (value !== undefined) params.set(key, value);
    }
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = await client.searchLogs(params.toString());
    if (this.jsonEnabled()) return answer;
    if (answer.hits.length === 0) this.log(`no line contains "${query.text}"`);
    answer.hits.forEach((hit, i) => {
      if (i > 0) this.log('--');
      for (const line of hitLines(hit)) this.log(line);
    });
    if (answer.more) this.log(`(more lines match: narrow the search or raise --limit, at most ${LOG_SEARCH_LIMIT_MAX})`);
    return answer;
  }
}

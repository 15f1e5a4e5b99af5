// One short line per lock trigger (`push(branches: main; paths: src/**)`), for `svc workflows`
// and `svc preview`. Only the filters that are set are shown.
import type { LockTrigger } from '../../schemas/lock.ts';

function list(values: readonly string[]): string {
  return values.join(',');
}

export function summarizeTrigger(trigger: LockTrigger): string {
  const parts: string[] = [];
  const add = (label: string, value: unknown): void => {
    if (Array.isArray(value) && value.length > 0) parts.push(`${label}: ${list(value as string[])}`);
    else if (typeof value === 'string' && value !== '') parts.push(`${label}: ${value}`);
  };
  const t = trigger as Record<string, unknown>;
  switch (trigger.type) {
    case 'schedule':
      parts.push(`${trigger.cron} ${trigger.timezone}`);
      add('branch', trigger.branch);
      break;
    case 'event':
      parts.push(trigger.name);
      break;
    case 'dispatch':
      add('inputs', Object.keys(trigger.inputs));
      add('branches', trigger.branches);
      break;
    default:
      for (const key of ['actions', 'branches', 'tags', 'paths', 'states', 'contexts', 'refTypes', 'workflows', 'conclusions', 'events', 'jobs', 'statuses', 'repositories']) {
        add(key, t[key]);
      }
      if (t['commitMessage'] !== undefined) parts.push('commitMessage filter');
      if (Array.isArray(t['requires']) && t['requires'].length > 0) parts.push(`requires ${t['requires'].length} file check(s)`);
      if (trigger.type === 'workflows_failed_batch') parts.push(`${trigger.threshold} in ${trigger.windowSeconds}s`);
  }
  return parts.length === 0 ? trigger.type : `${trigger.type}(${parts.join('; ')})`;
}

// Agent labels and `runsOn` matchers.
//
// Auto labels (added by the orchestrator from `agent.register`; agents cannot claim them):
//   svc:os:<os>              os as the agent reports it, lower-cased (`linux`, `darwin`, `win32`)
//   svc:arch:<arch>          `x64`, `arm64`, …
//   svc:role:static|ephemeral
//   svc:sandbox:<type>       one per sandbox the agent can start (`container`, `bare-metal`, …)
// Custom labels are the agent's own, outside the `svc:` namespace.
//
// Matchers (each job `runsOn` entry; all must hold): `label` (exact), `!label` (must not have),
// `prefix*` (some label starts with prefix), `!prefix*` (no label starts with prefix).
import { InputError } from '../../../core/errors.ts';

export const AUTO_LABEL_PREFIX = 'svc:';

export interface AgentFacts {
  os: string;
  arch: string;
  ephemeral: boolean;
  sandboxes: readonly string[];
  labels: readonly string[];
}

const LABEL = /^[^\s*!][^\s*]{0,199}$/;
const clean = (value: string): string => value.trim().toLowerCase().replace(/[^a-z0-9._-]+/g, '-');

/** The effective labels: auto labels first, then the custom ones (deduplicated, in order). */
export function effectiveLabels(facts: AgentFacts): string[] {
  for (const label of facts.labels) {
    if (!LABEL.test(label)) {
      throw new InputError('SVC_ERR_DISPATCH_LABEL_INVALID', `label "${label.slice(0, 80)}" is not valid: no spaces, "*" or leading "!"`, {
        details: { label },
      });
    }
    if (label.toLowerCase().startsWith(AUTO_LABEL_PREFIX)) {
      throw new InputError('SVC_ERR_DISPATCH_LABEL_RESERVED', `label "${label}" is in the reserved "svc:" namespace; the orchestrator adds those itself`, {
        details: { label },
      });
    }
  }
  const auto = [
    `svc:os:${clean(facts.os)}`,
    `svc:arch:${clean(facts.arch)}`,
    `svc:role:${facts.ephemeral ? 'ephemeral' : 'static'}`,
    ...facts.sandboxes.map((s) => `svc:sandbox:${clean(s)}`),
  ];
  return [...new Set([...auto, ...facts.labels])];
}

export interface Matcher {
  negate: boolean;
  prefix: boolean;
  value: string;
}

export function parseMatcher(text: string): Matcher {
  const negate = text.startsWith('!');
  const body = negate ? text.slice(1) : text;
  const prefix = body.endsWith('*');
  return { negate, prefix, value: prefix ? body.slice(0, -1) : body };
}

/** Whether one matcher holds for an agent's labels. */
export function holds(matcher: Matcher, labels: ReadonlySet<string>): boolean {
  let found: boolean;
  if (matcher.prefix) {
    found = false;
    for (const label of labels) {
      if (label.startsWith(matcher.value)) {
        found = true;
        break;
      }
    }
  } else {
    found = labels.has(matcher.value);
  }
  return matcher.negate ? !found : found;
}

/** Whether an agent with `labels` satisfies every matcher of `runsOn` (empty: any agent). */
export function satisfies(runsOn: readonly string[], labels: ReadonlySet<string> | readonly string[]): boolean {
  const set = labels instanceof Set ? labels : new Set(labels as readonly string[]);
  return runsOn.every((text) => holds(parseMatcher(text), set));
}

/** `runsOn` for a job, plus the container sandbox a container job implies. */
export function requiredMatchers(runsOn: readonly string[], needsContainer: boolean): string[] {
  return needsContainer && !runsOn.includes('svc:sandbox:container') ? [...runsOn, 'svc:sandbox:container'] : [...runsOn];
}

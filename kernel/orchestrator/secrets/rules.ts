// Protection rules of a secret context checked against a run (spec "Authentication" 7): the
// binding (repository patterns or orgs), branch globs, minimum trust, and the test-run flag.
// Pure: the caller loads the context and the run.
import { compilePatternList, quote, select, showList } from '../../../workflow/matching/patterns.ts';
import type { SecretContext } from './store.ts';

export interface RunFacts {
  orgId: string;
  repository: string;
  /** Full ref (`refs/heads/main`), or null when the event had none. */
  ref: string | null;
  /** `trusted`, `unknown` or `unresolved`. */
  trustTier: string;
  isTestRun: boolean;
}

export type RuleName = 'binding' | 'branches' | 'minTrust' | 'allowLocalExecution';

export type RuleVerdict = { ok: true } | { ok: false; rule: RuleName; reason: string };

const BRANCH_PREFIX = 'refs/heads/';

export function checkContextRules(context: SecretContext, run: RunFacts): RuleVerdict {
  const deny = (rule: RuleName, why: string): RuleVerdict => ({ ok: false, rule, reason: `secret context "${context.name}" refused by rule ${rule}: ${why}` });
  // Checked first: for a test run a non-test context is skipped (release.ts), whatever else holds.
  if (run.isTestRun && !context.allowLocalExecution) {
    return deny('allowLocalExecution', 'test runs may use only contexts with allowLocalExecution');
  }
  if (!context.bound) return deny('binding', 'the context is bound to no repository or org (svc-admin context bind)');
  const byOrg = context.orgs.includes(run.orgId);
  const byRepo = context.repositories.length > 0 && select(compilePatternList('repository', context.repositories), run.repository).selected;
  if (!byOrg && !byRepo) {
    return deny('binding', `repository ${quote(run.repository)} (org ${quote(run.orgId)}) matches none of repositories ${showList(context.repositories)} or orgs ${showList(context.orgs)}`);
  }
  if (context.branches.length > 0) {
    if (run.ref === null || !run.ref.startsWith(BRANCH_PREFIX)) {
      return deny('branches', `the run's ref ${run.ref === null ? '(none)' : quote(run.ref)} is not a branch; allowed branches ${showList(context.branches)}`);
    }
    const branch = run.ref.slice(BRANCH_PREFIX.length);
    if (!select(compilePatternList('ref', context.branches), branch).selected) {
      return deny('branches', `branch ${quote(branch)} matches none of ${showList(context.branches)}`);
    }
  }
  if (context.minTrust === 'trusted' && run.trustTier !== 'trusted') {
    return deny('minTrust', `the run's trust tier is ${run.trustTier}; the context requires trusted`);
  }
  return { ok: true };
}

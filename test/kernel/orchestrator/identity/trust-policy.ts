// The spec's recommended consumer trust policy (Authentication 5): pin `sub`, `is_fork` 'false',
// `head_repository` the same repository (for pull requests) and `trust_tier` 'trusted'.
export interface PolicyStatement {
  sub: string;
  repository: string;
  pullRequest: boolean;
}

export function policyAdmits(claims: Record<string, unknown>, statements: PolicyStatement[]): boolean {
  return statements.some((s) => {
    if (claims['sub'] !== s.sub) return false;
    if (claims['is_fork'] !== 'false') return false;
    if (claims['trust_tier'] !== 'trusted') return false;
    if (s.pullRequest && claims['head_repository'] !== s.repository) return false;
    return true;
  });
}

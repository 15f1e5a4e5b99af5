// The roles a person holds in an org (issue 42; docs/roles.md): what the relay enforces on routes,
// and what an approval clause's `roles` may name (a clause naming another role could never be met).
export const ORG_ROLES = ['viewer', 'developer', 'approver', 'admin'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];

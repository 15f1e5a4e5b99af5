// Operator admin authentication: scoped admin tokens and the `requireScope` hook (docs/admin-api.md).
export { adminScopeOf, createAdminAuth, type AdminAuth, type AdminGuard, type AdminPrincipal, type RequireScopeOptions } from './require-scope.ts';
export { ADMIN_SCOPES, type AdminScope } from '../../../schemas/admin-tokens.ts';
export { ADMIN_TOKEN_PREFIX, createAdminToken, hashAdminToken, listAdminTokens, revokeAdminToken } from './tokens.ts';
export { adminAuthSubsystem } from './subsystem.ts';

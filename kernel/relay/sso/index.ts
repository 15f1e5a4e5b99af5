// Single sign-on at the relay (docs/sso.md): the configured identity providers, checked at start
// (a bad provider entry or an unreachable/mismatched OpenID discovery stops the relay with the
// provider's name), and the group → role mapping of the config written to relay_group_roles.
import type { Logger } from 'pino';
import type { SsoProviderConfig, SvcConfig } from '../../../schemas/config.ts';
import { InputError, messageOf } from '../../../core/errors.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { Type } from 'typebox';
import { checkRole, syncConfigGroupRoles, type GroupRole } from '../people/roles.ts';
import { githubProvider } from './github.ts';
import { oidcProvider } from './oidc.ts';
import { isLoopbackUrl, type IdentityProvider } from './provider.ts';

export { SignInRefused, type IdentityProvider } from './provider.ts';

/** How long a token of `svc login` through a provider lives before it must be refreshed. */
export const DEFAULT_TOKEN_TTL_SECONDS = 8 * 60 * 60;

export interface Sso {
  readonly providers: ReadonlyMap<string, IdentityProvider>;
  readonly tokenTtlSeconds: number;
  readonly publicUrl: string | undefined;
  /** The client secret of a provider (it keys the sealed provider grants). */
  secretOf(providerId: string): string;
  readonly groupRoles: readonly GroupRole[];
}

function refuse(provider: string, reason: string): never {
  throw new InputError('SVC_ERR_RELAY_SSO_CONFIG_INVALID', `relay.sso.providers.${provider}: ${reason}`);
}

/** Fields one kind accepts and the other does not: refused rather than ignored. */
const ONLY_OIDC = ['issuer', 'scopes', 'groupsClaim', 'prompt'] as const;
const ONLY_GITHUB = ['webUrl', 'apiUrl'] as const;

function checkProvider(id: string, p: SsoProviderConfig): void {
  if (p.kind === 'oidc') {
    if (p.issuer === undefined) refuse(id, 'an oidc provider needs "issuer" (its issuer URL, e.g. https://login.example.com/realms/acme)');
    for (const f of ONLY_GITHUB) if (p[f] !== undefined) refuse(id, `"${f}" is for kind github only; remove it`);
    const issuer = new URL(p.issuer);
    if (issuer.protocol !== 'https:' && !isLoopbackUrl(issuer)) refuse(id, `the issuer must be https (plain http only on 127.0.0.1/localhost); got ${p.issuer}`);
    if (issuer.search !== '' || issuer.hash !== '') refuse(id, `the issuer is a URL without query or fragment; got ${p.issuer}`);
    if (p.scopes !== undefined && !p.scopes.includes('openid')) refuse(id, 'scopes must include "openid"');
  } else {
    for (const f of ONLY_OIDC) if (p[f] !== undefined) refuse(id, `"${f}" is for kind oidc only; remove it`);
    for (const f of ONLY_GITHUB) {
      const value = p[f];
      if (value !== undefined && new URL(value).protocol !== 'https:' && !isLoopbackUrl(new URL(value))) refuse(id, `"${f}" must be https (plain http only on 127.0.0.1/localhost); got ${value}`);
    }
  }
}

/** The providers of the relay config, checked; no network yet. */
export function createSso(config: SvcConfig['relay']['sso'], logger: Logger): Sso | undefined {
  if (config === undefined) return undefined;
  const providers = new Map<string, IdentityProvider>();
  const groupRoles: GroupRole[] = [];
  for (const [id, p] of Object.entries(config.providers ?? {})) {
    checkProvider(id, p);
    providers.set(id, p.kind === 'oidc' ? oidcProvider(id, p, logger) : githubProvider(id, p, logger));
    for (const [group, targets] of Object.entries(p.groupRoles ?? {})) {
      for (const target of targets) {
        const at = target.lastIndexOf(':');
        groupRoles.push({ orgId: target.slice(0, at), provider: id, group, role: checkRole(target.slice(at + 1)) });
      }
    }
  }
  if (providers.size === 0) throw new InputError('SVC_ERR_RELAY_SSO_CONFIG_INVALID', 'relay.sso.providers: name at least one provider, or remove relay.sso');
  return {
    providers,
    tokenTtlSeconds: config.tokenTtlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS,
    publicUrl: config.publicUrl?.replace(/\/+$/, ''),
    secretOf: (providerId) => config.providers?.[providerId]?.clientSecret ?? '',
    groupRoles,
  };
}

/**
 * At relay start: the group mapping's orgs must exist (it is written to relay_group_roles), and
 * every OpenID provider must answer its discovery with its own issuer.
 */
export async function startSso(sso: Sso, db: DatabasePool, logger: Logger): Promise<void> {
  const orgs = new Set((await db.any(sqlTyped(Type.Object({ org_id: Type.String() }))`select org_id from relay_orgs`)).map((r) => r.org_id));
  for (const m of sso.groupRoles) {
    if (!orgs.has(m.orgId)) refuse(m.provider, `groupRoles maps group "${m.group}" to org "${m.orgId}", which does not exist; create it ("svc-admin relay org create ${m.orgId}") or fix the mapping`);
  }
  await syncConfigGroupRoles(db, sso.groupRoles);
  for (const provider of sso.providers.values()) {
    try {
      await provider.start();
    } catch (error) {
      refuse(provider.id, `the provider could not be reached or its discovery is not valid: ${messageOf(error)}`);
    }
  }
  logger.info({ providers: [...sso.providers.keys()], groupRoles: sso.groupRoles.length }, 'single sign-on ready');
}

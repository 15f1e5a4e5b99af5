// An OpenID Connect provider, by issuer URL (docs/sso.md), through openid-client: discovery and
// the provider's keys (JWKS) are fetched and cached by the library; the authorization code flow
// uses PKCE (S256), state and nonce, and the ID token is verified (signature against the JWKS,
// issuer, audience, expiry, nonce) before any claim is read. Groups come from the ID token or
// userinfo (claim `groupsClaim`). A refresh asks the provider again with the refresh token: a
// person removed or disabled there makes it fail.
import type { Logger } from 'pino';
import * as client from 'openid-client';
import type { SsoProviderConfig } from '../../../schemas/config.ts';
import { UnavailableError, messageOf } from '../../../core/errors.ts';
import type { ProviderPerson, ProviderTokens } from '../people/store.ts';
import { isLoopbackUrl, type CompleteInput, type IdentityProvider, type Recheck, SignInRefused } from './provider.ts';

const DEFAULT_SCOPES = ['openid', 'profile', 'email', 'offline_access'];
const TIMEOUT_SECONDS = 10;

export function oidcProvider(id: string, config: SsoProviderConfig, logger: Logger): IdentityProvider {
  const issuer = new URL(config.issuer!);
  const scopes = config.scopes ?? DEFAULT_SCOPES;
  const groupsClaim = config.groupsClaim ?? 'groups';
  let discovered: Promise<client.Configuration> | undefined;

  const configuration = (): Promise<client.Configuration> => {
    discovered ??= client
      .discovery(issuer, config.clientId, config.clientSecret, client.ClientSecretBasic(config.clientSecret), {
        // Plain http only for a provider on this machine (tests, a local Dex): never across a network.
        execute: isLoopbackUrl(issuer) ? [client.allowInsecureRequests] : [],
        timeout: TIMEOUT_SECONDS,
      })
      .catch((error: unknown) => {
        discovered = undefined;
        throw new UnavailableError('SVC_ERR_RELAY_SSO_UNAVAILABLE', `the identity provider ${id} did not answer its discovery (${issuer.href}): ${messageOf(error)}; retry shortly`, { cause: error });
      });
    return discovered;
  };

  const personOf = async (cfg: client.Configuration, tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers, expectedSub?: string): Promise<ProviderPerson> => {
    const claims: Record<string, unknown> = { ...(tokens.claims() ?? {}) };
    const sub = typeof claims['sub'] === 'string' ? claims['sub'] : expectedSub;
    if (sub === undefined) throw new SignInRefused(`${id} answered without an ID token`);
    if (expectedSub !== undefined && sub !== expectedSub) throw new SignInRefused(`${id} answered for another person`);
    // Many providers put profile and groups in userinfo only: ask it when there is one.
    if (cfg.serverMetadata().userinfo_endpoint !== undefined) {
      const info = await client.fetchUserInfo(cfg, tokens.access_token, sub);
      for (const [k, v] of Object.entries(info)) if (claims[k] === undefined) claims[k] = v;
    }
    const text = (name: string): string | undefined => (typeof claims[name] === 'string' ? (claims[name] as string) : undefined);
    const groups = claims[groupsClaim];
    return {
      subject: sub,
      logins: [text('preferred_username'), text('email'), sub],
      displayName: text('name') ?? text('preferred_username'),
      email: text('email'),
      groups: Array.isArray(groups) ? groups.filter((g): g is string => typeof g === 'string') : [],
    };
  };

  return {
    id,
    kind: 'oidc',
    displayName: config.displayName ?? id,
    async start() {
      await configuration();
    },
    async authorizationUrl({ redirectUri, state, nonce, codeChallenge }) {
      const cfg = await configuration();
      return client.buildAuthorizationUrl(cfg, {
        redirect_uri: redirectUri,
        scope: scopes.join(' '),
        state,
        nonce,
        code_challenge: codeChallenge,
        code_challenge_method: 'S256',
        ...(config.prompt !== undefined ? { prompt: config.prompt } : {}),
      });
    },
    async complete(input: CompleteInput) {
      const cfg = await configuration();
      let tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;
      try {
        tokens = await client.authorizationCodeGrant(cfg, input.callbackUrl, {
          pkceCodeVerifier: input.verifier,
          expectedState: input.state,
          expectedNonce: input.nonce,
          idTokenExpected: true,
        });
      } catch (error) {
        throw refusalOrUnavailable(id, error);
      }
      const person = await personOf(cfg, tokens);
      return { person, tokens: { refreshToken: tokens.refresh_token, accessToken: tokens.access_token } };
    },
    async recheck(held: ProviderTokens, subject: string): Promise<Recheck> {
      if (held.refreshToken === undefined) {
        return { ok: false, reason: `${id} gave no refresh token at sign-in, so the person cannot be checked (request the offline_access scope)` };
      }
      const cfg = await configuration();
      try {
        const tokens = await client.refreshTokenGrant(cfg, held.refreshToken);
        const person = await personOf(cfg, tokens, subject);
        // Providers that rotate refresh tokens hand out a new one; others keep the old.
        return { ok: true, person, tokens: { refreshToken: tokens.refresh_token ?? held.refreshToken, accessToken: tokens.access_token } };
      } catch (error) {
        const refused = refusalOrUnavailable(id, error);
        if (refused instanceof SignInRefused) {
          logger.info({ provider: id, reason: refused.message }, 'identity provider refused a refresh');
          return { ok: false, reason: refused.message };
        }
        throw refused;
      }
    },
  };
}

/** An OAuth error answer (invalid_grant, access_denied, a failed check) refuses; anything else is the provider being unreachable. */
function refusalOrUnavailable(id: string, error: unknown): Error {
  if (error instanceof SignInRefused || error instanceof UnavailableError) return error;
  if (error instanceof client.ResponseBodyError) return new SignInRefused(`${error.error}${error.error_description !== undefined ? `: ${error.error_description}` : ''}`);
  if (error instanceof client.AuthorizationResponseError) return new SignInRefused(`${error.error}${error.error_description !== undefined ? `: ${error.error_description}` : ''}`);
  if (error instanceof client.ClientError) return new SignInRefused(error.message);
  return new UnavailableError('SVC_ERR_RELAY_SSO_UNAVAILABLE', `the identity provider ${id} did not answer: ${messageOf(error)}; retry shortly`, { cause: error });
}

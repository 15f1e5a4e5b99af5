// GitHub sign-in through an OAuth app (docs/sso.md): the web flow with state and PKCE (S256),
// the code exchanged at <webUrl>/login/oauth/access_token, the person read from <apiUrl>/user and
// their groups from /user/orgs (`<org>`) and /user/teams (`<org>/<team-slug>`). GitHub issues no
// ID token, so the person is whoever the API says the access token belongs to. A refresh asks
// the API again with the held token (or refreshes it, for apps with expiring tokens): a revoked
// authorization or a removed account answers 401 and the refresh fails.
import type { Logger } from 'pino';
import type { SsoProviderConfig } from '../../../schemas/config.ts';
import { UnavailableError, messageOf } from '../../../core/errors.ts';
import type { ProviderPerson, ProviderTokens } from '../people/store.ts';
import { type CompleteInput, type IdentityProvider, type Recheck, SignInRefused } from './provider.ts';

const TIMEOUT_MS = 10_000;
const SCOPES = 'read:user user:email read:org';

interface GithubUser {
  id: number;
  login: string;
  name?: string | null;
  email?: string | null;
}

export function githubProvider(id: string, config: SsoProviderConfig, logger: Logger): IdentityProvider {
  const web = (config.webUrl ?? 'https://github.com').replace(/\/+$/, '');
  const api = (config.apiUrl ?? 'https://api.github.com').replace(/\/+$/, '');

  const call = async (url: string, init: RequestInit): Promise<Response> => {
    try {
      return await fetch(url, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (error) {
      throw new UnavailableError('SVC_ERR_RELAY_SSO_UNAVAILABLE', `the identity provider ${id} (GitHub) did not answer: ${messageOf(error)}; retry shortly`, { cause: error });
    }
  };

  /** POST /login/oauth/access_token: GitHub answers 200 with either tokens or { error }. */
  const tokenRequest = async (form: Record<string, string>): Promise<ProviderTokens> => {
    const response = await call(`${web}/login/oauth/access_token`, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: config.clientId, client_secret: config.clientSecret, ...form }),
    });
    if (response.status >= 500) throw new UnavailableError('SVC_ERR_RELAY_SSO_UNAVAILABLE', `the identity provider ${id} (GitHub) answered ${response.status}; retry shortly`);
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (typeof body['error'] === 'string') throw new SignInRefused(`${body['error']}${typeof body['error_description'] === 'string' ? `: ${body['error_description']}` : ''}`);
    if (typeof body['access_token'] !== 'string') throw new SignInRefused(`GitHub answered ${response.status} without an access token`);
    return { accessToken: body['access_token'], refreshToken: typeof body['refresh_token'] === 'string' ? body['refresh_token'] : undefined };
  };

  const apiGet = async <T>(path: string, token: string): Promise<T> => {
    const response = await call(`${api}${path}`, {
      headers: { accept: 'application/vnd.github+json', authorization: `Bearer ${token}`, 'x-github-api-version': '2022-11-28', 'user-agent': 'svc-relay' },
    });
    if (response.status === 401 || response.status === 403 || response.status === 404) throw new SignInRefused(`GitHub refused the authorization (${response.status} on ${path}): it was revoked, or the account is gone or suspended`);
    if (!response.ok) throw new UnavailableError('SVC_ERR_RELAY_SSO_UNAVAILABLE', `the identity provider ${id} (GitHub) answered ${response.status} on ${path}; retry shortly`);
    return (await response.json()) as T;
  };

  const personOf = async (token: string): Promise<ProviderPerson> => {
    const user = await apiGet<GithubUser>('/user', token);
    if (typeof user.id !== 'number' || typeof user.login !== 'string') throw new SignInRefused('GitHub answered /user without an id and login');
    const orgs = await apiGet<Array<{ login?: unknown }>>('/user/orgs?per_page=100', token);
    const teams = await apiGet<Array<{ slug?: unknown; organization?: { login?: unknown } }>>('/user/teams?per_page=100', token);
    const groups = [
      ...orgs.flatMap((o) => (typeof o.login === 'string' ? [o.login] : [])),
      ...teams.flatMap((t) => (typeof t.slug === 'string' && typeof t.organization?.login === 'string' ? [`${t.organization.login}/${t.slug}`] : [])),
    ];
    return { subject: String(user.id), logins: [user.login], displayName: user.name ?? user.login, email: user.email ?? undefined, groups };
  };

  return {
    id,
    kind: 'github',
    displayName: config.displayName ?? 'GitHub',
    async start() {},
    async authorizationUrl({ redirectUri, state, codeChallenge }) {
      const url = new URL(`${web}/login/oauth/authorize`);
      url.search = new URLSearchParams({ client_id: config.clientId, redirect_uri: redirectUri, scope: SCOPES, state, code_challenge: codeChallenge, code_challenge_method: 'S256', allow_signup: 'false' }).toString();
      return url;
    },
    async complete(input: CompleteInput) {
      const query = input.callbackUrl.searchParams;
      if (query.get('error') !== null) throw new SignInRefused(`${query.get('error')}${query.get('error_description') !== null ? `: ${query.get('error_description')}` : ''}`);
      if (query.get('state') !== input.state) throw new SignInRefused('the state of the answer does not match this sign-in');
      const code = query.get('code');
      if (code === null || code === '') throw new SignInRefused('GitHub answered without a code');
      const tokens = await tokenRequest({ code, redirect_uri: input.redirectUri, code_verifier: input.verifier });
      return { person: await personOf(tokens.accessToken!), tokens };
    },
    async recheck(held: ProviderTokens, subject: string): Promise<Recheck> {
      try {
        const tokens = held.refreshToken !== undefined ? await tokenRequest({ grant_type: 'refresh_token', refresh_token: held.refreshToken }) : held;
        if (tokens.accessToken === undefined) return { ok: false, reason: 'no GitHub token is held for this person' };
        const person = await personOf(tokens.accessToken);
        if (person.subject !== subject) return { ok: false, reason: 'GitHub answered for another account' };
        return { ok: true, person, tokens: { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken ?? held.refreshToken } };
      } catch (error) {
        if (error instanceof SignInRefused) {
          logger.info({ provider: id, reason: error.message }, 'GitHub refused a refresh');
          return { ok: false, reason: error.message };
        }
        throw error;
      }
    },
  };
}

// Renewing a stored token of `svc login` through an identity provider (docs/login.md, "Lifetime
// and refresh"): such a token lives a few hours; shortly before it ends the CLI trades the stored
// refresh token for a new pair at POST /v1/token/refresh, where the relay first asks the provider
// whether the person is still there. A refusal means signing in again; nothing else is tried.
import { AuthenticationError, UnavailableError, messageOf } from '../core/errors.ts';

/** What of the config file a renewal reads and writes (platform-client.ts passes its own file access in). */
export interface StoredLogin {
  token?: string | undefined;
  refreshToken?: string | undefined;
  expiresAt?: string | undefined;
  [key: string]: unknown;
}

export interface LoginStore {
  read(): Promise<StoredLogin>;
  write(login: StoredLogin): Promise<unknown>;
  timeoutMs: number;
}

/** Renew this long before the stored expiry, so a command never starts with a token about to end. */
export const RENEW_BEFORE_MS = 60_000;

/** The stored token, renewed first when it has a refresh token and ends within RENEW_BEFORE_MS. */
export async function renewIfDue(platformUrl: string, file: StoredLogin, store: LoginStore, now = Date.now()): Promise<string> {
  const token = file.token!;
  if (file.refreshToken === undefined || file.expiresAt === undefined) return token;
  const ends = Date.parse(file.expiresAt);
  if (Number.isFinite(ends) && ends - now > RENEW_BEFORE_MS) return token;
  return (await renewToken(platformUrl, file.refreshToken, store)).token;
}

/** Trades the refresh token for a new pair and stores it; refusals say to log in again. */
export async function renewToken(platformUrl: string, refreshToken: string, store: LoginStore): Promise<{ token: string; expiresAt: string }> {
  let response: Response;
  try {
    response = await fetch(`${platformUrl}/v1/token/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ refresh_token: refreshToken }),
      signal: AbortSignal.timeout(store.timeoutMs),
    });
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    throw new UnavailableError('SVC_ERR_CLI_PLATFORM_UNREACHABLE', `cannot reach the Platform at ${platformUrl} to renew the token: ${messageOf(cause ?? error)}`);
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!response.ok) {
    const e = body?.['error'] as { code?: unknown; message?: unknown } | undefined;
    const reason = typeof e?.message === 'string' ? e.message : `the Platform answered ${response.status}`;
    if (response.status >= 500) throw new UnavailableError('SVC_ERR_CLI_PLATFORM_UNREACHABLE', `the Platform could not renew the token now: ${reason}; retry shortly`);
    throw new AuthenticationError('SVC_ERR_CLI_LOGIN_REFRESH_FAILED', `the stored token expired and could not be renewed: ${reason}; run "svc login" again`);
  }
  const token = body?.['access_token'];
  const refresh = body?.['refresh_token'];
  const expiresAt = body?.['expires_at'];
  if (typeof token !== 'string' || typeof refresh !== 'string' || typeof expiresAt !== 'string') {
    throw new UnavailableError('SVC_ERR_CLI_PLATFORM_BAD_ANSWER', "the Platform's token renewal answer does not have the expected shape; is the CLI older than the Platform?");
  }
  // Read again: another command may have written the file meanwhile.
  const latest = await store.read();
  await store.write({ ...latest, token, refreshToken: refresh, expiresAt });
  return { token, expiresAt };
}

// What the relay needs of an identity provider, whatever its kind: where to send the browser,
// how to turn the callback into a person (checked), and how to ask again at a token refresh.
import type { ProviderPerson, ProviderTokens } from '../people/store.ts';

export interface CompleteInput {
  /** The callback URL as the provider called it (the relay's public callback + the query). */
  callbackUrl: URL;
  redirectUri: string;
  state: string;
  nonce: string;
  verifier: string;
}

export type Recheck = { ok: true; person: ProviderPerson; tokens: ProviderTokens } | { ok: false; reason: string };

export interface IdentityProvider {
  readonly id: string;
  readonly kind: 'oidc' | 'github';
  readonly displayName: string;
  /** Checks the provider answers (discovery) at relay start. */
  start(): Promise<void>;
  authorizationUrl(input: { redirectUri: string; state: string; nonce: string; codeChallenge: string }): Promise<URL>;
  /** The person of a callback; throws SignInRefused (the provider said no, or a check failed). */
  complete(input: CompleteInput): Promise<{ person: ProviderPerson; tokens: ProviderTokens }>;
  /** Asks the provider about the person again (token refresh); unreachable → throws UnavailableError. */
  recheck(tokens: ProviderTokens, subject: string): Promise<Recheck>;
}

/** The provider (or a check of its answer) refused: the person is not signed in. */
export class SignInRefused extends Error {}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** An address on this machine, where plain http is tolerated (tests, a local provider). */
export function isLoopbackUrl(url: URL): boolean {
  return LOOPBACK.has(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
}

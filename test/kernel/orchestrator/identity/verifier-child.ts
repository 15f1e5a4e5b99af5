// An independent verifier in its own process: discovers the issuer over HTTP with openid-client,
// fetches the JWKS from the advertised jwks_uri and verifies the token with jose.
// argv: <issuer> <audience> <token>; prints `{ ok, claims | error }`.
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { allowInsecureRequests, discovery } from 'openid-client';

const [issuer, audience, token] = process.argv.slice(2) as [string, string, string];
try {
  const config = await discovery(new URL(issuer), 'svc-test-verifier', undefined, undefined, { execute: [allowInsecureRequests] });
  const metadata = config.serverMetadata();
  if (!metadata.jwks_uri) throw new Error('discovery has no jwks_uri');
  const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
  const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer, audience, algorithms: ['ES256'] });
  process.stdout.write(JSON.stringify({ ok: true, header: protectedHeader, claims: payload, metadata }) + '\n');
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, error: `${(error as Error).name}: ${(error as Error).message}` }) + '\n');
}

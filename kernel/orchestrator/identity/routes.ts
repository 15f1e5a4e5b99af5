// Public identity routes (spec "Orchestrator public endpoints") and the admin signing-key list.
// When the issuer carries a path (`https://ci.example.test/tenant-a`) every public route is also
// served under that path, so the orchestrator works mounted at the path or at the root.
import { createHash, timingSafeEqual } from 'node:crypto';
import { VerifyAttestationRequest } from '../../../schemas/identity.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { AuthenticationError, NotAllowedError } from '../../../core/errors.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { listSigningKeys } from './key-store.ts';
import type { IdentityService } from './service.ts';

/** Scopes the bootstrap admin token holds (it holds every scope). See README.md. */
export const ADMIN_SCOPES = ['secret.read'] as const;

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Bearer check against `secrets.bootstrapAdminToken`, which has all scopes. */
export function checkAdminToken(header: string | undefined, bootstrapToken: string | undefined, scope: (typeof ADMIN_SCOPES)[number]): void {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? '');
  if (!match) throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_MISSING', `this admin route needs "Authorization: Bearer <token>" with scope ${scope}`);
  if (bootstrapToken === undefined) {
    throw new NotAllowedError('SVC_ERR_ADMIN_NOT_CONFIGURED', 'no admin token is configured on this orchestrator (SVC_BOOTSTRAP_ADMIN_TOKEN)');
  }
  if (!timingSafeEqual(digest(match[1] as string), digest(bootstrapToken))) {
    throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_INVALID', 'the admin token is not valid');
  }
}

export function issuerPathPrefix(issuer: string): string {
  return new URL(issuer).pathname.replace(/\/+$/, '');
}

export async function registerIdentityRoutes(app: SvcHttpServer, service: IdentityService): Promise<void> {
  const prefixes = [...new Set(['', issuerPathPrefix(service.issuer)])];
  for (const prefix of prefixes) {
    app.get(`${prefix}/.well-known/openid-configuration`, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return service.discovery();
    });
    app.get(`${prefix}/.well-known/jwks.json`, async (_request, reply) => {
      // Short: a revoked key must leave verifiers' caches soon.
      reply.header('cache-control', 'public, max-age=30');
      return service.jwks();
    });
    app.post(`${prefix}/v1/verify-attestation`, { schema: { body: VerifyAttestationRequest } }, async (request) => {
      const body = request.body;
      return service.verifyAttestation({ bundle: body.bundle, artifactSha256: body.artifactSha256, ...(body.artifactName === undefined ? {} : { artifactName: body.artifactName }) });
    });
  }
}

export async function registerSigningKeyAdminRoute(app: SvcHttpServer, pool: DatabasePool, bootstrapToken: () => string | undefined): Promise<void> {
  app.get('/api/v1/admin/signing-keys', async (request) => {
    checkAdminToken(request.headers.authorization, bootstrapToken(), 'secret.read');
    return { keys: await listSigningKeys(pool) };
  });
}

// Public identity routes (spec "Orchestrator public endpoints") and the admin signing-key list.
// When the issuer carries a path (`https://ci.example.test/tenant-a`) every public route is also
// served under that path, so the orchestrator works mounted at the path or at the root.
import { VerifyAttestationRequest } from '../../../schemas/identity.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { AdminAuth } from '../admin-auth/require-scope.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { listSigningKeys } from './key-store.ts';
import type { IdentityService } from './service.ts';

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
    // Sigstore trust material for `<artifact>.sigstore.json` (docs/provenance.md): short-cached like the JWKS.
    app.get(`${prefix}/.well-known/svc/trusted_root.json`, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=30');
      return service.sigstoreTrustedRoot();
    });
    app.get(`${prefix}/.well-known/svc/public_keys.json`, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=30');
      return service.sigstorePublicKeys();
    });
    // The trust-root file online: revoked keys with their compromise times and the TSA chain (docs/provenance.md).
    app.get(`${prefix}/.well-known/svc-key-status.json`, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=30');
      return service.keyStatus();
    });
    app.post(`${prefix}/v1/verify-attestation`, { schema: { body: VerifyAttestationRequest } }, async (request) => {
      const body = request.body;
      return service.verifyAttestation({ bundle: body.bundle, artifactSha256: body.artifactSha256, ...(body.artifactName === undefined ? {} : { artifactName: body.artifactName }) });
    });
  }
}

/** Key metadata only; spec: "for a token without scope restrictions that has secret.read". */
export async function registerSigningKeyAdminRoute(app: SvcHttpServer, pool: DatabasePool, auth: AdminAuth): Promise<void> {
  app.get('/api/v1/admin/signing-keys', { onRequest: auth.requireScope('secret.read', { unrestricted: true }) }, async () => {
    return { keys: await listSigningKeys(pool) };
  });
}

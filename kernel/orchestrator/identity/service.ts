// The identity service one orchestrator node holds: minting, attestations, discovery, JWKS and
// verification, over one custody plugin and the shared key table.
import type { Logger } from 'pino';
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import {
  IDENTITY_CLAIM_NAMES,
  type AttestationBundle,
  type CustodyKind,
  type DiscoveryDocument,
  type Jwks,
  type TimestampAuthority,
  type TrustRoot,
  type VerifyAttestationResponse,
} from '../../../schemas/identity.ts';
import type {
  AttestationCreateRequest as AttestationCreateRequestSchema,
  AttestationCreateResponse as AttestationCreateResponseSchema,
  OidcTokenRequest as OidcTokenRequestSchema,
  OidcTokenResponse as OidcTokenResponseSchema,
  ProtocolError as ProtocolErrorSchema,
} from '../../../schemas/wire/agent.ts';
import type { Static } from 'typebox';

type OidcTokenRequest = Static<typeof OidcTokenRequestSchema>;
type OidcTokenResponse = Static<typeof OidcTokenResponseSchema>;
type AttestationCreateRequest = Static<typeof AttestationCreateRequestSchema>;
type AttestationCreateResponse = Static<typeof AttestationCreateResponseSchema>;
type ProtocolError = Static<typeof ProtocolErrorSchema>;
import type { DatabasePool } from '../../services/db/index.ts';
import { isSvcError, messageOf } from '../../../core/errors.ts';
import {
  attestationBundle,
  createAttestation,
  fulfilDeferredAttestations,
  type CreateAttestationRequest,
  type CreateAttestationResult,
  type FulfilResult,
} from './attestations.ts';
import { listSigningKeys, publicKeySet, revokedKids } from './key-store.ts';
import { revokedKeyMaterial } from './key-store.ts';
import { Minter, type MintRequest, type MintResult } from './mint.ts';
import type { Timestamper } from './timestamp.ts';
import { verifyAttestationBundle, type VerifyTrust } from './verify-attestation.ts';
import { publicKeysDocument, toSigstoreBundle, trustedRootDocument } from './sigstore-bundle.ts';

export interface IdentityServiceOptions {
  pool: DatabasePool;
  custody: CustodyExtensionPoint;
  custodyKind: CustodyKind;
  /** The provenance issuer (`SVC_ORCHESTRATOR_PROVENANCE_ISSUER`). */
  issuer: string;
  orchestratorId: string;
  logger: Logger;
  /** Test knob: how long mint waits for a key (default 7.5 s). */
  keyWaitMs?: number;
  /** RFC 3161 TSA stamping every attestation signature (timestamp.ts); absent: none. */
  timestamper?: Timestamper;
}

export interface IdentityService {
  readonly issuer: string;
  mintIdentityToken(request: MintRequest): Promise<MintResult>;
  /** The dispatch layer's handler for an agent's `oidc.token.request`. */
  answerOidcTokenRequest(agentId: string, message: OidcTokenRequest): Promise<OidcTokenResponse | ProtocolError>;
  createAttestation(request: CreateAttestationRequest): Promise<CreateAttestationResult>;
  /** The dispatch layer's handler for an agent's `attestation.create.request`. */
  answerAttestationRequest(agentId: string, message: AttestationCreateRequest): Promise<AttestationCreateResponse>;
  fulfilDeferredAttestations(options?: { origin?: 'deferred' | 'offline-backfill'; limit?: number }): Promise<FulfilResult>;
  attestationBundle(id: string): Promise<AttestationBundle | undefined>;
  /** What an online verdict is checked against: this issuer, the served keys, the revoked kids. */
  trust(): Promise<VerifyTrust>;
  /** Verdict against the live key table (revoked keys refused). */
  verifyAttestation(input: { bundle: unknown; artifactSha256: string; artifactName?: string }): Promise<VerifyAttestationResponse>;
  discovery(): DiscoveryDocument;
  jwks(): Promise<Jwks>;
  /** The key-status document (`/.well-known/svc-key-status.json`): a trust root with revoked keys' compromise times and the TSA chain. */
  keyStatus(): Promise<TrustRoot>;
  /** The configured TSA and its chain (for trust-root documents); empty without one. */
  timestampAuthorities(): TimestampAuthority[];
  /** Sigstore TrustedRoot for `<artifact>.sigstore.json` (no logs: the keys are the trust). */
  sigstoreTrustedRoot(): Record<string, unknown>;
  /** The served keys in Sigstore's PublicKey form, keyed by the bundles' `publicKey.hint`. */
  sigstorePublicKeys(): Promise<{ keys: Record<string, unknown> }>;
}

/** `https://ci.example.test/tenant-a/` → `https://ci.example.test/tenant-a`. */
export function normalizeIssuer(issuer: string): string {
  const url = new URL(issuer);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

export function discoveryDocument(issuer: string): DiscoveryDocument {
  return {
    issuer,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    id_token_signing_alg_values_supported: ['ES256'],
    claims_supported: [...IDENTITY_CLAIM_NAMES],
    response_types_supported: ['id_token'],
    subject_types_supported: ['public'],
  };
}

export function createIdentityService(options: IdentityServiceOptions): IdentityService {
  const issuer = normalizeIssuer(options.issuer);
  const minter = new Minter({
    pool: options.pool,
    custody: options.custody,
    custodyKind: options.custodyKind,
    issuer,
    orchestratorId: options.orchestratorId,
    logger: options.logger,
    ...(options.keyWaitMs === undefined ? {} : { keyWaitMs: options.keyWaitMs }),
  });
  const deps = {
    pool: options.pool,
    custody: options.custody,
    minter,
    logger: options.logger,
    ...(options.timestamper === undefined ? {} : { timestamper: options.timestamper }),
  };
  const authorities: TimestampAuthority[] = options.timestamper ? [{ uri: options.timestamper.url, certChain: [...options.timestamper.certificates] }] : [];
  const discovery = discoveryDocument(issuer);
  const trust = async (): Promise<VerifyTrust> => {
    const [jwks, revoked, revokedKeys] = await Promise.all([publicKeySet(options.pool), revokedKids(options.pool), revokedKeyMaterial(options.pool)]);
    return { issuer, jwks, revokedKids: revoked, revokedKeys, timestampAuthorities: authorities };
  };
  return {
    issuer,
    mintIdentityToken: (request) => minter.mintIdentityToken(request),
    async answerOidcTokenRequest(agentId, message) {
      try {
        const result = await minter.mintIdentityToken({ jobId: message.jobId, agentId, audience: message.audience });
        return { type: 'oidc.token.response', requestId: message.requestId, ...result };
      } catch (error) {
        if (!isSvcError(error)) options.logger.error({ err: error }, 'identity token request failed');
        const code = isSvcError(error) ? error.code : 'SVC_ERR_INTERNAL';
        const text = isSvcError(error) ? error.message : `identity token request failed: ${messageOf(error)}`;
        return { type: 'protocol.error', requestId: message.requestId, error: { code, message: text } };
      }
    },
    createAttestation: (request) => createAttestation(deps, request),
    async answerAttestationRequest(agentId, message) {
      try {
        const result = await createAttestation(deps, {
          jobId: message.jobId,
          agentId,
          artifact: message.artifact,
          ...(message.parameters === undefined ? {} : { parameters: message.parameters }),
        });
        if ('deferred' in result) {
          return { type: 'attestation.create.response', requestId: message.requestId, deferred: true, code: result.code, attestationId: result.attestationId, statementHash: result.statementHash };
        }
        return {
          type: 'attestation.create.response',
          requestId: message.requestId,
          attestationId: result.attestationId,
          statementHash: result.bundle.statementHash,
          fileName: result.fileName,
          bundle: result.bundle,
          sigstoreBundle: toSigstoreBundle(result.bundle),
        };
      } catch (error) {
        if (!isSvcError(error)) options.logger.error({ err: error }, 'attestation request failed');
        const code = isSvcError(error) ? error.code : 'SVC_ERR_INTERNAL';
        const text = isSvcError(error) ? error.message : `attestation request failed: ${messageOf(error)}`;
        return { type: 'attestation.create.response', requestId: message.requestId, error: { code, message: text } };
      }
    },
    fulfilDeferredAttestations: (fulfilOptions) => fulfilDeferredAttestations(deps, fulfilOptions),
    attestationBundle: (id) => attestationBundle(options.pool, id),
    trust,
    async verifyAttestation(input) {
      return verifyAttestationBundle({ ...input, trust: await trust() });
    },
    discovery: () => discovery,
    jwks: () => publicKeySet(options.pool),
    async keyStatus() {
      const [jwks, revokedKeys] = await Promise.all([publicKeySet(options.pool), revokedKeyMaterial(options.pool)]);
      return { issuer, jwks, revokedKeys, timestampAuthorities: authorities };
    },
    timestampAuthorities: () => authorities,
    sigstoreTrustedRoot: () => trustedRootDocument(authorities),
    async sigstorePublicKeys() {
      const [jwks, summaries, revokedKeys] = await Promise.all([publicKeySet(options.pool), listSigningKeys(options.pool), revokedKeyMaterial(options.pool)]);
      return publicKeysDocument(jwks, summaries, revokedKeys);
    },
  };
}

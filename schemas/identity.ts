// Identity and provenance contracts (spec "Signing key", "Discovery document", "Identity token",
// "Orchestrator public endpoints"): token claims, discovery document, JWKS, trust root,
// attestation bundle and the verify-attestation request/response.
import { Type, type Static } from 'typebox';

const Strict = { additionalProperties: false } as const;
const Text = Type.String({ maxLength: 2000 });
const B64Url = Type.String({ pattern: '^[A-Za-z0-9_-]+$', maxLength: 200 });
const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$' });

export const SigningKeyStatus = Type.Enum(['active', 'retiring', 'retired', 'revoked']);
export type SigningKeyStatus = Static<typeof SigningKeyStatus>;

export const CustodyKind = Type.Enum(['db', 'aws-kms', 'command']);
export type CustodyKind = Static<typeof CustodyKind>;

export const TriState = Type.Enum(['true', 'false', 'unresolved']);
export const TrustTierClaim = Type.Enum(['trusted', 'unknown', 'unresolved']);
export const AttestationOrigin = Type.Enum(['live', 'deferred', 'offline-backfill']);
export type AttestationOrigin = Static<typeof AttestationOrigin>;

/** Every claim an identity token carries; all are always present (spec "Identity token"). */
export const IdentityClaims = Type.Object(
  {
    iss: Text,
    aud: Text,
    sub: Text,
    repository: Text,
    ref: Text,
    base_ref: Text,
    head_ref: Text,
    head_repository: Text,
    is_fork: TriState,
    event_name: Text,
    trust_tier: TrustTierClaim,
    actor: Text,
    sha: Text,
    workflow_ref: Text,
    svc_run_id: Text,
    svc_job_id: Text,
    org_id: Text,
    orchestrator_id: Text,
    provider: Text,
    source_origin: Type.Enum(['triggered', 'run-remote']),
    attestation_origin: AttestationOrigin,
    statement_hash: Type.Union([Sha256Hex, Type.Null()]),
    workflow_repository: Text,
    exp: Type.Integer(),
    iat: Type.Integer(),
    nbf: Type.Integer(),
    jti: Text,
  },
  Strict,
);
export type IdentityClaims = Static<typeof IdentityClaims>;

/** Claim names in the order the discovery document lists them. */
export const IDENTITY_CLAIM_NAMES: readonly (keyof IdentityClaims)[] = Object.keys(IdentityClaims.properties) as (keyof IdentityClaims)[];

export const DiscoveryDocument = Type.Object(
  {
    issuer: Text,
    jwks_uri: Text,
    id_token_signing_alg_values_supported: Type.Array(Type.Literal('ES256')),
    claims_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    subject_types_supported: Type.Array(Type.String()),
  },
  Strict,
);
export type DiscoveryDocument = Static<typeof DiscoveryDocument>;

/** Public half of an ES256 key as served in the JWKS. */
export const EcPublicJwk = Type.Object(
  {
    kty: Type.Literal('EC'),
    crv: Type.Literal('P-256'),
    x: B64Url,
    y: B64Url,
    kid: Type.String({ minLength: 1, maxLength: 200 }),
    alg: Type.Literal('ES256'),
    use: Type.Literal('sig'),
  },
  Strict,
);
export type EcPublicJwk = Static<typeof EcPublicJwk>;

export const Jwks = Type.Object({ keys: Type.Array(EcPublicJwk, { maxItems: 1000 }) }, Strict);
export type Jwks = Static<typeof Jwks>;

/**
 * A revoked key as trust material publishes it: out of the JWKS (no token it signs is accepted),
 * kept here so a signature timestamped before `compromisedAt` still verifies. `compromisedAt`
 * null: a plain revoke, nothing it signed verifies.
 */
export const RevokedKey = Type.Object(
  { kid: Type.String({ minLength: 1, maxLength: 200 }), jwk: EcPublicJwk, revokedAt: Type.String(), compromisedAt: Type.Union([Type.String(), Type.Null()]) },
  Strict,
);
export type RevokedKey = Static<typeof RevokedKey>;

/** An RFC 3161 timestamp authority: its URL and certificate chain (PEM; self-signed ones are the anchors). */
export const TimestampAuthority = Type.Object(
  { uri: Type.String({ maxLength: 2000 }), certChain: Type.Array(Type.String({ maxLength: 20_000 }), { minItems: 1, maxItems: 10 }) },
  Strict,
);
export type TimestampAuthority = Static<typeof TimestampAuthority>;

/**
 * `svc-admin signing-key export --public`, and the orchestrator's key-status document
 * (`/.well-known/svc-key-status.json`): public material only.
 */
export const TrustRoot = Type.Object(
  {
    issuer: Text,
    jwks: Jwks,
    revokedKeys: Type.Optional(Type.Array(RevokedKey, { maxItems: 1000 })),
    timestampAuthorities: Type.Optional(Type.Array(TimestampAuthority, { maxItems: 10 })),
  },
  Strict,
);
export type TrustRoot = Static<typeof TrustRoot>;

export const SigningKeySummary = Type.Object(
  {
    kid: Type.String(),
    status: SigningKeyStatus,
    custody: CustodyKind,
    createdAt: Type.String(),
    retiringAt: Type.Union([Type.String(), Type.Null()]),
    retiredAt: Type.Union([Type.String(), Type.Null()]),
    revokedAt: Type.Union([Type.String(), Type.Null()]),
    revokeReason: Type.Union([Type.String(), Type.Null()]),
    /** Revoked with `--compromised-at`: signatures timestamped before it stay verifiable. */
    compromisedAt: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  Strict,
);
export type SigningKeySummary = Static<typeof SigningKeySummary>;

export const SigningKeyList = Type.Object({ keys: Type.Array(SigningKeySummary) }, Strict);
export type SigningKeyList = Static<typeof SigningKeyList>;

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
export const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const SLSA_PROVENANCE_TYPE = 'https://slsa.dev/provenance/v1';
export const SVC_BUILD_TYPE = 'https://svc.dev/build/v1';
export const ATTESTATION_BUNDLE_MEDIA_TYPE = 'application/vnd.svc.attestation.v1+json';

export const DsseEnvelope = Type.Object(
  {
    payloadType: Type.String({ maxLength: 200 }),
    /** Standard base64 of the statement bytes. */
    payload: Type.String({ maxLength: 4 * 1024 * 1024 }),
    signatures: Type.Array(Type.Object({ keyid: Type.String({ maxLength: 200 }), sig: Type.String({ maxLength: 1000 }) }, Strict), {
      minItems: 1,
      maxItems: 8,
    }),
  },
  Strict,
);
export type DsseEnvelope = Static<typeof DsseEnvelope>;

/** `<artifact>.svc.json`. */
export const AttestationBundle = Type.Object(
  {
    mediaType: Type.Literal(ATTESTATION_BUNDLE_MEDIA_TYPE),
    issuer: Text,
    kid: Type.String({ maxLength: 200 }),
    /** SHA-256 (hex) of the statement bytes carried in the envelope. */
    statementHash: Sha256Hex,
    attestationOrigin: AttestationOrigin,
    /** Identity token of the job; for deferred bundles its `statement_hash` binds it to the statement. */
    identityToken: Type.String({ maxLength: 16_000 }),
    dsseEnvelope: DsseEnvelope,
    /** RFC 3161 token(s) over the DSSE signature bytes, base64 DER (the Sigstore bundle's field). */
    timestampVerificationData: Type.Optional(
      Type.Object({ rfc3161Timestamps: Type.Array(Type.Object({ signedTimestamp: Type.String({ maxLength: 64_000 }) }, Strict), { maxItems: 8 }) }, Strict),
    ),
    /** Set when a TSA is configured but gave no timestamp: why (the attestation is untimestamped). */
    timestampError: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  Strict,
);
export type AttestationBundle = Static<typeof AttestationBundle>;

export const SIGSTORE_BUNDLE_V03_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
export const SIGSTORE_TRUSTED_ROOT_MEDIA_TYPE = 'application/vnd.dev.sigstore.trustedroot+json;version=0.1';

/**
 * `<artifact>.sigstore.json`: the same DSSE envelope as the svc bundle, in the Sigstore bundle
 * v0.3 form (protobuf-specs JSON) with the orchestrator's public key as verification material
 * (`publicKey.hint` = JWKS kid). No transparency-log entry: trust comes from the published key.
 */
export const SigstoreBundle = Type.Object(
  {
    mediaType: Type.Literal(SIGSTORE_BUNDLE_V03_MEDIA_TYPE),
    verificationMaterial: Type.Object(
      {
        publicKey: Type.Object({ hint: Type.String({ minLength: 1, maxLength: 200 }) }, Strict),
        tlogEntries: Type.Array(Type.Unknown(), { maxItems: 16 }),
        timestampVerificationData: Type.Optional(
          Type.Object({ rfc3161Timestamps: Type.Array(Type.Object({ signedTimestamp: Type.String({ maxLength: 64_000 }) }, Strict), { maxItems: 8 }) }, Strict),
        ),
      },
      Strict,
    ),
    dsseEnvelope: DsseEnvelope,
  },
  Strict,
);
export type SigstoreBundle = Static<typeof SigstoreBundle>;

export const VerifyAttestationRequest = Type.Object(
  {
    bundle: Type.Unknown(),
    /** SHA-256 (hex) of the artifact bytes. */
    artifactSha256: Sha256Hex,
    /** Optional: the artifact name the subject must carry. */
    artifactName: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  Strict,
);
export type VerifyAttestationRequest = Static<typeof VerifyAttestationRequest>;

export const AttestationFailureReason = Type.Enum([
  'bundle_malformed',
  'issuer_mismatch',
  'payload_type_mismatch',
  'unknown_key',
  'key_revoked',
  'statement_tampered',
  'signature_invalid',
  'statement_invalid',
  'artifact_mismatch',
  'token_invalid',
  'token_mismatch',
  'timestamp_invalid',
]);
export type AttestationFailureReason = Static<typeof AttestationFailureReason>;

export const VerifyAttestationResponse = Type.Union([
  Type.Object(
    {
      ok: Type.Literal(true),
      issuer: Text,
      kid: Type.String(),
      subject: Type.Object({ name: Type.String(), sha256: Sha256Hex }, Strict),
      /** Absent for a Sigstore bundle: only the svc bundle's identity token records it. */
      attestationOrigin: Type.Optional(AttestationOrigin),
      /** Which bundle form was verified (absent: `svc`). */
      format: Type.Optional(Type.Enum(['svc', 'sigstore-v0.3'])),
      claims: Type.Record(Type.String(), Type.Unknown()),
      /** The trusted RFC 3161 time of the signature, when the bundle carries one a known TSA signed. */
      signedAt: Type.Optional(Type.Object({ genTime: Type.String(), tsa: Type.String() }, Strict)),
    },
    Strict,
  ),
  Type.Object({ ok: Type.Literal(false), reason: AttestationFailureReason, message: Type.String() }, Strict),
]);
export type VerifyAttestationResponse = Static<typeof VerifyAttestationResponse>;

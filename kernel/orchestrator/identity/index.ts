// Identity and provenance: the OIDC issuer, signing keys, attestations.
export { identitySubsystem, FULFIL_SWEEP_MS } from './subsystem.ts';
export { createIdentityService, discoveryDocument, normalizeIssuer, type IdentityService, type IdentityServiceOptions } from './service.ts';
export { Minter, checkAudience, KEY_WAIT_MS, TOKEN_LIFETIME_SECONDS, type MintRequest, type MintResult, type SignedToken } from './mint.ts';
export { claimsFor, loadRunJob, subjectOf, type RunJobRow } from './claims.ts';
export { signCompactJws } from './jws.ts';
export {
  activeKey,
  createKeyVault,
  listSigningKeys,
  publicKeySet,
  registerExternalKey,
  retireSigningKey,
  revokeSigningKey,
  revokedKids,
  signingKeyStatus,
  SIGNING_KEYS_STORE,
} from './key-store.ts';
export { signingKeysSealedStore } from './sealed-store.ts';
export { ATTESTATION_AUDIENCE, attestationBundle, bundleFileName, createAttestation, fulfilDeferredAttestations, type CreateAttestationResult, type FulfilResult } from './attestations.ts';
export { preAuthEncoding, provenanceStatement, sha256Hex, type Artifact, type ProvenanceStatement } from './dsse.ts';
export { verifyAttestationBundle, type VerifyAttestationInput, type VerifyTrust } from './verify-attestation.ts';
export { registerIdentityRoutes, registerSigningKeyAdminRoute } from './routes.ts';
export { MasterKeyMismatchError } from './errors.ts';

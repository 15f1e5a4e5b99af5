// SLSA Verification Summary Attestation (docs/provenance.md "Verification summary"): the
// orchestrator verifies the provenance it signed for an artifact digest against a policy (which
// repository, which workflow, which trust tier) and signs the outcome as an in-toto statement
// with the `https://slsa.dev/verification_summary/v1` predicate, in a Sigstore bundle v0.3 like
// `<artifact>.sigstore.json`, so the same outside verifiers check it.
import { Type } from 'typebox';
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { IN_TOTO_PAYLOAD_TYPE, IN_TOTO_STATEMENT_TYPE, SIGSTORE_BUNDLE_V03_MEDIA_TYPE, type SigstoreBundle } from '../../../schemas/identity.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { preAuthEncoding, rawToDerSignature, sha256Hex } from './dsse.ts';
import { verifyAttestationBundle, type VerifyTrust } from './verify-attestation.ts';

export const SLSA_VSA_TYPE = 'https://slsa.dev/verification_summary/v1';

export interface VsaPolicy {
  repository?: string;
  /** The workflow name (the statement's externalParameters.workflow.name). */
  workflow?: string;
  trustTier?: string;
}

export interface VsaResult {
  bundle: SigstoreBundle;
  result: 'PASSED' | 'FAILED';
  /** Why each considered attestation did not count (empty when one passed). */
  reasons: string[];
}

export interface VsaDeps {
  pool: DatabasePool;
  custody: CustodyExtensionPoint;
  issuer: string;
  trust: VerifyTrust;
  now?: Date;
}

const Row = Type.Object({ id: Type.String(), artifact_name: Type.String(), statement_hash: Type.String(), bundle: Type.Unknown() });

function policyMisses(policy: VsaPolicy, claims: Record<string, unknown>, workflow: unknown): string[] {
  const misses: string[] = [];
  if (policy.repository !== undefined && claims['repository'] !== policy.repository) misses.push(`repository ${String(claims['repository'])} is not ${policy.repository}`);
  if (policy.workflow !== undefined && workflow !== policy.workflow) misses.push(`workflow ${String(workflow)} is not ${policy.workflow}`);
  if (policy.trustTier !== undefined && claims['trust_tier'] !== policy.trustTier) misses.push(`trust tier ${String(claims['trust_tier'])} is not ${policy.trustTier}`);
  return misses;
}

/** The policy as a stable document: its SHA-256 is the VSA's `policy.digest`. */
function policyDocument(policy: VsaPolicy): string {
  return JSON.stringify({ repository: policy.repository ?? null, workflow: policy.workflow ?? null, trust_tier: policy.trustTier ?? null });
}

export async function createVsa(deps: VsaDeps, digest: string, policy: VsaPolicy): Promise<VsaResult> {
  const sha256 = digest.replace(/^sha256:/, '').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new InputError('SVC_ERR_IDENTITY_ARTIFACT', `${digest} is not an artifact digest (64 hex characters, optionally sha256:)`);
  const rows = await deps.pool.any(sqlTyped(Row)`
    SELECT id::text AS id, artifact_name, statement_hash, bundle FROM attestations
    WHERE artifact_sha256 = ${sha256} AND status = 'fulfilled' ORDER BY created_at, id`);
  if (rows.length === 0) throw new NotFoundError('SVC_ERR_IDENTITY_ATTESTATION_NOT_FOUND', `no signed attestation has artifact sha256 ${sha256} (svc-admin attestations list shows them)`);
  const passed: Array<(typeof rows)[number]> = [];
  const reasons: string[] = [];
  for (const row of rows) {
    // Each input is verified now, against today's keys: a revoked key's provenance does not count.
    const verdict = await verifyAttestationBundle({ bundle: row.bundle, artifactSha256: sha256, trust: deps.trust });
    if (!verdict.ok) {
      reasons.push(`attestation ${row.id}: ${verdict.reason}: ${verdict.message}`);
      continue;
    }
    const payload = (row.bundle as { dsseEnvelope: { payload: string } }).dsseEnvelope.payload;
    const statement = JSON.parse(Buffer.from(payload, 'base64').toString('utf8')) as { predicate?: { buildDefinition?: { externalParameters?: { workflow?: { name?: unknown } } } } };
    const misses = policyMisses(policy, verdict.claims, statement.predicate?.buildDefinition?.externalParameters?.workflow?.name);
    if (misses.length > 0) reasons.push(`attestation ${row.id}: ${misses.join('; ')}`);
    else passed.push(row);
  }
  const result = passed.length > 0 ? 'PASSED' : 'FAILED';
  const name = (passed[0] ?? rows[0])!.artifact_name;
  const policyText = policyDocument(policy);
  const query = new URLSearchParams(Object.entries({ repository: policy.repository, workflow: policy.workflow, trust_tier: policy.trustTier }).filter((e): e is [string, string] => e[1] !== undefined));
  const statement = {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [{ name, digest: { sha256 } }],
    predicateType: SLSA_VSA_TYPE,
    predicate: {
      verifier: { id: deps.issuer },
      timeVerified: (deps.now ?? new Date()).toISOString(),
      resourceUri: `${deps.issuer}/artifacts/sha256:${sha256}`,
      policy: { uri: `${deps.issuer}/policies/provenance${query.size > 0 ? `?${query.toString()}` : ''}`, digest: { sha256: sha256Hex(policyText) } },
      inputAttestations: passed.map((row) => ({ uri: `${deps.issuer}/attestations/${row.id}`, digest: { sha256: row.statement_hash } })),
      verificationResult: result,
      // Signed provenance from a hosted build service that the step cannot forge: SLSA Build L2.
      verifiedLevels: result === 'PASSED' ? ['SLSA_BUILD_LEVEL_2'] : [],
      slsaVersion: '1.0',
    },
  };
  const payload = Buffer.from(JSON.stringify(statement), 'utf8');
  const kid = await deps.custody.keyId();
  const sig = rawToDerSignature(await deps.custody.sign(preAuthEncoding(IN_TOTO_PAYLOAD_TYPE, payload), kid));
  const bundle: SigstoreBundle = {
    mediaType: SIGSTORE_BUNDLE_V03_MEDIA_TYPE,
    verificationMaterial: { publicKey: { hint: kid }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } },
    dsseEnvelope: { payloadType: IN_TOTO_PAYLOAD_TYPE, payload: payload.toString('base64'), signatures: [{ keyid: kid, sig: sig.toString('base64') }] },
  };
  return { bundle, result, reasons };
}

// DSSE v1 pre-authentication encoding and the in-toto Statement v1 with an SLSA provenance v1
// predicate, built from the run/job rows only (a step adds parameters, never identity).
import { createHash } from 'node:crypto';
import { IN_TOTO_STATEMENT_TYPE, SLSA_PROVENANCE_TYPE, SVC_BUILD_TYPE } from '../../../schemas/identity.ts';
import { claimsFor, subjectOf, type RunJobRow } from './claims.ts';

/** PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body (lengths in bytes, decimal). */
export function preAuthEncoding(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `, 'ascii'), type, Buffer.from(` ${payload.length} `, 'ascii'), payload]);
}

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function derInteger(bytes: Uint8Array): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start += 1;
  const body = Buffer.from(bytes.subarray(start));
  // A set high bit would read as negative: DER prefixes a zero byte.
  const value = (body[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), body]) : body;
  return Buffer.concat([Buffer.from([0x02, value.length]), value]);
}

/**
 * JOSE raw r‖s (what custody plugins return) → ASN.1 DER `SEQUENCE { r, s }`, the ECDSA encoding
 * DSSE verifiers outside this project (securesystemslib, sigstore, in-toto) expect.
 */
export function rawToDerSignature(raw: Uint8Array): Buffer {
  if (raw.length !== 64) throw new Error(`an ES256 raw signature is 64 bytes, not ${raw.length}`);
  const r = derInteger(raw.subarray(0, 32));
  const s = derInteger(raw.subarray(32));
  return Buffer.concat([Buffer.from([0x30, r.length + s.length]), r, s]);
}

export interface Artifact {
  name: string;
  sha256: string;
}

export interface ProvenanceStatement {
  _type: string;
  subject: Array<{ name: string; digest: { sha256: string } }>;
  predicateType: string;
  predicate: {
    buildDefinition: {
      buildType: string;
      externalParameters: Record<string, unknown>;
      internalParameters: Record<string, unknown>;
      resolvedDependencies: Array<{ uri: string; name?: string; digest: Record<string, string> }>;
    };
    runDetails: {
      builder: { id: string };
      metadata: { invocationId: string; startedOn?: string };
    };
  };
}

export interface StatementOptions {
  issuer: string;
  orchestratorId: string;
  /** The step's own fields (`ctx.attestProvenance({ predicate })`): external, never identity. */
  stepParameters?: Record<string, unknown>;
}

/** Claims that belong to one token, not to the run: left out of the statement. */
const TOKEN_ONLY = new Set(['aud', 'iat', 'nbf', 'exp', 'jti', 'attestation_origin', 'statement_hash']);

/** The run's identity claims (spec "Identity token"), as every token of this job carries them. */
export function runIdentityClaims(row: RunJobRow, issuer: string, orchestratorId: string): Record<string, unknown> {
  const claims = claimsFor(row, { issuer, audience: '', orchestratorId, origin: 'live', statementHash: null, nowSeconds: 0, lifetimeSeconds: 0, jti: '' });
  return Object.fromEntries(Object.entries(claims).filter(([name]) => !TOKEN_ONLY.has(name)));
}

export function provenanceStatement(row: RunJobRow, artifact: Artifact, options: StatementOptions): ProvenanceStatement {
  const { issuer } = options;
  const externalParameters: Record<string, unknown> = {
    repository: row.repository,
    ref: row.ref ?? '',
    sha: row.sha,
    event_name: row.parent_run_id !== null ? 'rerun' : row.event_name,
    workflow: { name: row.workflow, repository: row.workflow_repository, ref: `${row.workflow}@${row.sha}` },
    job: row.job_name,
  };
  if (options.stepParameters !== undefined) externalParameters['stepParameters'] = options.stepParameters;
  const metadata: ProvenanceStatement['predicate']['runDetails']['metadata'] = { invocationId: `${issuer}/runs/${row.run_id}/jobs/${row.job_id}` };
  if (row.job_started_at !== null) metadata.startedOn = row.job_started_at;
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [{ name: artifact.name, digest: { sha256: artifact.sha256 } }],
    predicateType: SLSA_PROVENANCE_TYPE,
    predicate: {
      buildDefinition: {
        buildType: SVC_BUILD_TYPE,
        externalParameters,
        internalParameters: { ...runIdentityClaims(row, issuer, options.orchestratorId), sub: subjectOf(row) },
        resolvedDependencies: [{ uri: `git+${row.provider}:${row.repository}@${row.ref ?? row.sha}`, name: row.repository, digest: { gitCommit: row.sha } }],
      },
      runDetails: {
        builder: { id: issuer },
        metadata,
      },
    },
  };
}

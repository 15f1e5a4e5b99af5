// DSSE v1 pre-authentication encoding and the in-toto Statement v1 with an SLSA provenance v1
// predicate, built from the run/job rows only.
import { createHash } from 'node:crypto';
import { IN_TOTO_STATEMENT_TYPE, SLSA_PROVENANCE_TYPE, SVC_BUILD_TYPE } from '../../../schemas/identity.ts';
import { subjectOf, type RunJobRow } from './claims.ts';

/** PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body (lengths in bytes, decimal). */
export function preAuthEncoding(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `, 'ascii'), type, Buffer.from(` ${payload.length} `, 'ascii'), payload]);
}

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
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
      resolvedDependencies: Array<{ uri: string; digest: Record<string, string> }>;
    };
    runDetails: { builder: { id: string }; metadata: { invocationId: string } };
  };
}

export function provenanceStatement(row: RunJobRow, artifact: Artifact, issuer: string): ProvenanceStatement {
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [{ name: artifact.name, digest: { sha256: artifact.sha256 } }],
    predicateType: SLSA_PROVENANCE_TYPE,
    predicate: {
      buildDefinition: {
        buildType: SVC_BUILD_TYPE,
        externalParameters: {
          repository: row.repository,
          ref: row.ref ?? '',
          sha: row.sha,
          event_name: row.parent_run_id !== null ? 'rerun' : row.event_name,
          workflow: { name: row.workflow, repository: row.workflow_repository, ref: `${row.workflow}@${row.sha}` },
        },
        internalParameters: {
          svc_run_id: row.run_id,
          svc_job_id: row.job_id,
          org_id: row.org_id,
          provider: row.provider,
          sub: subjectOf(row),
          trust_tier: row.trust_tier,
          is_fork: row.is_fork,
          source_origin: row.source_origin,
        },
        resolvedDependencies: [{ uri: `git+${row.provider}:${row.repository}`, digest: { gitCommit: row.sha } }],
      },
      runDetails: {
        builder: { id: issuer },
        metadata: { invocationId: `${issuer}/runs/${row.run_id}/jobs/${row.job_id}` },
      },
    },
  };
}

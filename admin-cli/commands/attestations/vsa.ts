// `svc-admin attestations vsa <artifact digest> [--repository r] [--workflow w] [--trust-tier t]
// [--out file]`: a SLSA Verification Summary Attestation for the artifact, signed with the
// orchestrator's active key (db custody, as backfill signs): the provenance signed for that digest
// is verified now against the policy given, and the outcome (PASSED / FAILED) is signed as a
// Sigstore bundle v0.3 (docs/provenance.md "Verification summary"). Exit 1 when FAILED.
import { writeFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { createIdentityService } from '../../../kernel/orchestrator/identity/service.ts';
import { createVsa, type VsaPolicy, type VsaResult } from '../../../kernel/orchestrator/identity/vsa.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, dbCustodyFor, quietLogger, withDatabase } from '../signing-key/shared.ts';

export default class AttestationsVsa extends SvcCommand {
  static override description = 'Verify the provenance of an artifact digest against a policy and print a signed SLSA verification summary (VSA)';
  static override examples = [
    '<%= config.bin %> attestations vsa sha256:4f1c… --repository acme/widgets --workflow release --trust-tier trusted --out app.tgz.vsa.sigstore.json',
  ];
  static override args = { digest: Args.string({ required: true, description: 'the artifact digest: 64 hex characters, optionally prefixed sha256:' }) };
  static override flags = {
    ...databaseFlag,
    repository: Flags.string({ description: 'the provenance must come from this repository (owner/name)' }),
    workflow: Flags.string({ description: 'the provenance must come from this workflow (its name)' }),
    'trust-tier': Flags.string({ description: 'the run must have had this trust tier', options: ['trusted', 'unknown', 'unresolved'] }),
    out: Flags.string({ description: 'write the VSA bundle to this file instead of standard output' }),
  };

  async run(): Promise<VsaResult> {
    const { args, flags } = await this.parse(AttestationsVsa);
    const config = await adminConfig();
    const issuer = config.orchestrator.provenanceIssuer;
    if (!issuer) throw new InputError(USAGE_ERROR_CODE, "set SVC_ORCHESTRATOR_PROVENANCE_ISSUER to the orchestrators' issuer: the VSA names it as the verifier");
    const keys = await adminMasterKeys(config);
    const policy: VsaPolicy = {
      ...(flags.repository === undefined ? {} : { repository: flags.repository }),
      ...(flags.workflow === undefined ? {} : { workflow: flags.workflow }),
      ...(flags['trust-tier'] === undefined ? {} : { trustTier: flags['trust-tier'] }),
    };
    const result = await withDatabase(databaseUrlOf(config, flags['database-url']), async (pool) => {
      const custody = dbCustodyFor(config, pool, keys);
      const service = createIdentityService({ pool, custody, custodyKind: 'db', issuer, orchestratorId: 'svc-admin', logger: quietLogger, keyWaitMs: 0 });
      return createVsa({ pool, custody, issuer: service.issuer, trust: await service.trust() }, args.digest, policy);
    });
    const text = `${JSON.stringify(result.bundle, null, 2)}\n`;
    if (flags.out !== undefined) await writeFile(flags.out, text);
    else if (!this.jsonEnabled()) process.stdout.write(text);
    if (!this.jsonEnabled()) {
      this.logToStderr(`${result.result}${flags.out === undefined ? '' : ` (wrote ${flags.out})`}`);
      for (const reason of result.reasons) this.logToStderr(`  ${reason}`);
    }
    if (result.result !== 'PASSED') process.exitCode = 1;
    return result;
  }
}

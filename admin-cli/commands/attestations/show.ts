// `svc-admin attestations show <id> [--out <file>]`: the bundle of a fulfilled attestation (what
// the job would have written as <artifact>.svc.json), e.g. once a deferred one has been signed.
import { writeFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { ConflictError, InputError, NotFoundError } from '../../../core/errors.ts';
import { attestationBundle, listAttestationById } from '../../../kernel/orchestrator/identity/attestations.ts';
import { isUuid } from '../../../kernel/orchestrator/identity/claims.ts';
import type { AttestationBundle } from '../../../schemas/identity.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from '../signing-key/shared.ts';

export default class AttestationsShow extends SvcCommand {
  static override description = 'Print (or write with --out) the bundle of a signed attestation';
  static override examples = ['<%= config.bin %> attestations show 0b9e… --out dist/app.tgz.svc.json'];
  static override args = { id: Args.string({ required: true, description: 'attestation id (svc-admin attestations list; ctx.attestProvenance result)' }) };
  static override flags = { ...databaseFlag, out: Flags.string({ description: 'write the bundle to this file instead of standard output' }) };

  async run(): Promise<AttestationBundle> {
    const { args, flags } = await this.parse(AttestationsShow);
    if (!isUuid(args.id)) throw new InputError(USAGE_ERROR_CODE, `${args.id} is not an attestation id (a UUID)`);
    const config = await adminConfig();
    const { row, bundle } = await withDatabase(databaseUrlOf(config, flags['database-url']), async (pool) => ({
      row: await listAttestationById(pool, args.id),
      bundle: await attestationBundle(pool, args.id),
    }));
    if (row === undefined) throw new NotFoundError('SVC_ERR_IDENTITY_ATTESTATION_NOT_FOUND', `no attestation has id ${args.id} (svc-admin attestations list shows them)`);
    if (bundle === undefined) {
      throw new ConflictError('SVC_ERR_IDENTITY_ATTESTATION_PENDING', `attestation ${args.id} is still pending (${row.defer_code ?? 'deferred'}): it is signed once a key is ready, or now with "svc-admin attestations backfill"`);
    }
    const text = `${JSON.stringify(bundle, null, 2)}\n`;
    if (flags.out !== undefined) {
      await writeFile(flags.out, text);
      if (!this.jsonEnabled()) this.log(`wrote ${flags.out}: ${row.artifact_name} [${bundle.attestationOrigin}]`);
    } else if (!this.jsonEnabled()) {
      process.stdout.write(text);
    }
    return bundle;
  }
}

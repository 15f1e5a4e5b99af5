// `svc-admin attestations list [--run <id>] [--pending | --fulfilled] [--limit n]`: provenance
// attestations from the orchestrator database, newest first (id, status, origin, subject).
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { listAttestations, type AttestationRow } from '../../../kernel/orchestrator/identity/attestations.ts';
import { isUuid } from '../../../kernel/orchestrator/identity/claims.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from '../signing-key/shared.ts';

export default class AttestationsList extends SvcCommand {
  static override description = 'List provenance attestations (pending ones wait for a signing key)';
  static override examples = ['<%= config.bin %> attestations list --pending', '<%= config.bin %> attestations list --run 6f1c…'];
  static override flags = {
    ...databaseFlag,
    run: Flags.string({ description: 'only this run (id)' }),
    pending: Flags.boolean({ description: 'only statements still waiting to be signed', exclusive: ['fulfilled'] }),
    fulfilled: Flags.boolean({ description: 'only signed attestations', exclusive: ['pending'] }),
    limit: Flags.integer({ description: 'at most this many (1 to 1000)', default: 100, min: 1, max: 1000 }),
  };

  async run(): Promise<{ attestations: AttestationRow[] }> {
    const { flags } = await this.parse(AttestationsList);
    if (flags.run !== undefined && !isUuid(flags.run)) throw new InputError(USAGE_ERROR_CODE, `--run ${flags.run} is not a run id (a UUID)`);
    const config = await adminConfig();
    const status = flags.pending ? 'pending' : flags.fulfilled ? 'fulfilled' : undefined;
    const attestations = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      listAttestations(pool, { limit: flags.limit, ...(flags.run === undefined ? {} : { runId: flags.run }), ...(status === undefined ? {} : { status }) }),
    );
    if (!this.jsonEnabled()) {
      if (attestations.length === 0) this.log('no attestations');
      for (const a of attestations) {
        const state = a.status === 'pending' ? `pending (${a.defer_code ?? 'deferred'})` : `fulfilled ${a.attestation_origin ?? ''}`;
        // The signed timestamp (docs/provenance.md): when the TSA dated it, or why it is untimestamped.
        const stamp = a.timestamped_at ? `  timestamped ${a.timestamped_at}` : a.timestamp_error ? `  untimestamped (${a.timestamp_error})` : '';
        this.log(`${a.id}  run ${a.run_id}  ${state.padEnd(28)}  ${a.artifact_name}  sha256:${a.artifact_sha256}${stamp}`);
      }
    }
    return { attestations };
  }
}

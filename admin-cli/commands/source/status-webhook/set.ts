// `svc-admin source status-webhook set <source-id> --url <http(s) URL> (--secret <s> |
// --secret-file <path> | --generate-secret)`: where the source's run status changes are POSTed,
// signed with HMAC-SHA256 (docs/forge-status.md). The secret is stored sealed under the master
// key; a generated one is printed once. A URL that is not http(s), or no secret, is refused.
import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../../core/cli/base-command.ts';
import { InputError, messageOf } from '../../../../core/errors.ts';
import { checkStatusWebhookUrl, MIN_STATUS_WEBHOOK_SECRET_LENGTH, setStatusWebhook, type StatusWebhookSummary } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { adminConfig, databaseFlag, databaseUrl, masterKey, withDatabase } from '../shared.ts';
import { audited } from '../../audit/shared.ts';

export default class SourceStatusWebhookSet extends SvcCommand {
  static override description = "Send a source's run status changes to a webhook (JSON, signed with HMAC-SHA256); replaces an earlier one";
  static override examples = [
    '<%= config.bin %> source status-webhook set 6f1c2b8e-… --url https://hooks.example.com/ci --generate-secret',
    '<%= config.bin %> source status-webhook set 6f1c2b8e-… --url https://hooks.example.com/ci --secret-file hook.secret',
  ];
  static override args = { id: Args.string({ required: true, description: 'source id (from "svc-admin source list")' }) };
  static override flags = {
    ...databaseFlag,
    url: Flags.string({ required: true, description: 'http:// or https:// URL to POST run status changes to' }),
    secret: Flags.string({ description: 'signing secret (at least 16 characters)', exclusive: ['secret-file', 'generate-secret'] }),
    'secret-file': Flags.string({ description: 'read the signing secret from this file (trailing newline dropped)', exclusive: ['secret', 'generate-secret'] }),
    'generate-secret': Flags.boolean({ description: 'generate a random signing secret and print it once', default: false, exclusive: ['secret', 'secret-file'] }),
  };

  async run(): Promise<{ webhook: StatusWebhookSummary; secret?: string }> {
    const { args, flags } = await this.parse(SourceStatusWebhookSet);
    // Refused before the database or the master key is touched.
    checkStatusWebhookUrl(flags.url);
    let secret = flags.secret;
    if (flags['secret-file'] !== undefined) {
      try {
        secret = (await readFile(flags['secret-file'], 'utf8')).replace(/\r?\n$/, '');
      } catch (error) {
        throw new InputError(USAGE_ERROR_CODE, `could not read --secret-file: ${messageOf(error)}`);
      }
    }
    if (!flags['generate-secret'] && (secret === undefined || secret.length < MIN_STATUS_WEBHOOK_SECRET_LENGTH)) {
      throw new InputError(
        'SVC_ERR_FORGE_STATUS_SECRET_REQUIRED',
        `a run-status webhook needs a signing secret of at least ${MIN_STATUS_WEBHOOK_SECRET_LENGTH} characters: pass --secret, --secret-file or --generate-secret`,
      );
    }
    const config = await adminConfig();
    const key = await masterKey(config);
    const result = await withDatabase(databaseUrl(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'source.status_webhook_set', target: `source:${args.id}` }, () =>
        setStatusWebhook(pool, key, args.id, { url: flags.url, ...(secret === undefined ? {} : { secret }), generateSecret: flags['generate-secret'] }),
      ),
    );
    if (!this.jsonEnabled()) {
      this.log(`run status of source ${result.webhook.sourceId} (org ${result.webhook.orgId}) goes to ${result.webhook.url}`);
      if (flags['generate-secret']) this.log(`signing secret (shown once): ${result.secret}`);
      else this.log('signed with the secret given (stored sealed)');
    }
    // A secret the operator gave is not echoed back.
    return { webhook: result.webhook, ...(flags['generate-secret'] ? { secret: result.secret } : {}) };
  }
}

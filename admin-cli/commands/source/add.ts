// `svc-admin source add github|git|generic --org <org_id> ...`: registers a source and prints its
// webhook URL and its secret (shown once; only the sealed secret is stored).
import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { checkGenericSettings } from '../../../kernel/orchestrator/ingest/entry/generic.ts';
import { createSource, webhookUrl, type SourceSummary } from '../../../kernel/orchestrator/sources/store.ts';
import { InputError, messageOf } from '../../../core/errors.ts';
import { adminConfig, databaseFlag, databaseUrl, ingestBaseUrl, masterKey, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

function keyValues(values: readonly string[] | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of values ?? []) {
    const at = entry.indexOf('=');
    if (at <= 0) throw new InputError(USAGE_ERROR_CODE, `--${flag} takes key=value (got ${JSON.stringify(entry)})`);
    out[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return out;
}

function location(text: string | undefined, flag: string): { header: string } | { payloadField: string } | undefined {
  if (text === undefined) return undefined;
  const match = /^(header|payload):(.+)$/.exec(text);
  if (!match) throw new InputError(USAGE_ERROR_CODE, `--${flag} is header:<name> or payload:<dot.path> (got ${JSON.stringify(text)})`);
  return match[1] === 'header' ? { header: match[2]!.toLowerCase() } : { payloadField: match[2]! };
}

export interface SourceAddResult {
  source: SourceSummary;
  webhookUrl: string;
  /** Shown once. */
  secret: string;
}

export default class SourceAdd extends SvcCommand {
  static override description = 'Add a webhook source (GitHub App, git remote or generic sender); prints its webhook URL and secret once';
  static override examples = [
    '<%= config.bin %> source add git --org acme --name app-repo',
    '<%= config.bin %> source add github --org acme --app-id 12345 --private-key-file app.pem',
    '<%= config.bin %> source add generic --org acme --source-id alerts --event-type payload:event.type --signature-mode bearer',
  ];
  static override args = { kind: Args.string({ required: true, description: 'provider kind: github, git or generic' }) };
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ required: true, description: 'org id the source belongs to' }),
    name: Flags.string({ description: 'display name' }),
    'app-id': Flags.string({ description: 'github: the GitHub App id (the routing target)' }),
    'target-id': Flags.string({ description: 'the forge target id for other provider kinds' }),
    'private-key-file': Flags.string({ description: 'github: the App private key (PEM), stored sealed' }),
    credential: Flags.string({ multiple: true, description: 'extra sealed credential key=value (repeatable)' }),
    setting: Flags.string({ multiple: true, description: 'non-secret provider setting key=value (repeatable)' }),
    'settings-json': Flags.string({ description: 'non-secret settings as a JSON object' }),
    'fork-policy': Flags.string({ description: "run or ignore fork pull requests (reject is stored as ignore); default: the org's trust policy (svc-admin org-settings), else run" }),
    'allow-org-wide-workflows': Flags.string({ multiple: true, description: 'repository patterns whose organization-wide workflows may fire for other repositories' }),
    'allow-org-wide-events': Flags.string({ multiple: true, description: "repository patterns whose events may fire other repositories' organization-wide workflows" }),
    secret: Flags.string({ description: 'use this webhook secret instead of generating one (at least 16 characters)' }),
    url: Flags.string({ description: 'base address senders post to (default: SVC_PLATFORM_URL, else the orchestrator)' }),
    // generic
    'source-id': Flags.string({ description: 'generic: the URL path segment (default: a UUID)' }),
    'signature-mode': Flags.string({ description: 'generic: hmac, bearer, ip-allowlist or none', default: 'hmac' }),
    'signature-header': Flags.string({ description: 'generic hmac: header carrying the signature (default x-hub-signature-256)' }),
    allow: Flags.string({ multiple: true, description: 'generic ip-allowlist: address or CIDR (repeatable)' }),
    'event-type': Flags.string({ description: 'generic: where the event name is, header:<name> or payload:<dot.path>', default: 'header:x-event-type' }),
    'delivery-id': Flags.string({ description: 'generic: where the delivery id is, header:<name> or payload:<dot.path> (default: a UUID per delivery)' }),
    'max-payload-bytes': Flags.integer({ description: 'generic: largest body accepted', default: 1024 * 1024, min: 1 }),
    'rate-limit-rpm': Flags.integer({ description: 'generic: deliveries per minute', default: 600, min: 1 }),
    'idempotency-window': Flags.integer({ description: 'generic: seconds a delivery id stays a duplicate', default: 86_400, min: 0 }),
  };

  async run(): Promise<SourceAddResult> {
    const { args, flags } = await this.parse(SourceAdd);
    const kind = args.kind;
    if (!/^[a-z][a-z0-9-]{0,39}$/.test(kind)) throw new InputError(USAGE_ERROR_CODE, `provider kind ${JSON.stringify(kind)} is not valid (github, git, generic)`);
    let settings: Record<string, unknown> = keyValues(flags.setting, 'setting');
    if (flags['settings-json'] !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(flags['settings-json']);
      } catch (error) {
        throw new InputError(USAGE_ERROR_CODE, `--settings-json is not JSON: ${messageOf(error)}`);
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InputError(USAGE_ERROR_CODE, '--settings-json must be a JSON object');
      settings = { ...settings, ...(parsed as Record<string, unknown>) };
    }
    const credentials = keyValues(flags.credential, 'credential');
    if (flags['private-key-file']) {
      try {
        credentials['privateKey'] = await readFile(flags['private-key-file'], 'utf8');
      } catch (error) {
        throw new InputError(USAGE_ERROR_CODE, `could not read --private-key-file: ${messageOf(error)}`);
      }
    }
    if (kind === 'generic') {
      const eventType = location(flags['event-type'], 'event-type')!;
      const deliveryId = location(flags['delivery-id'], 'delivery-id');
      settings = {
        signature: {
          mode: flags['signature-mode'],
          ...(flags['signature-header'] ? { header: flags['signature-header'].toLowerCase() } : {}),
          ...(flags.allow ? { allow: flags.allow } : {}),
        },
        maxPayloadBytes: flags['max-payload-bytes'],
        rateLimitRpm: flags['rate-limit-rpm'],
        eventType,
        ...(deliveryId ? { deliveryId } : {}),
        idempotencyWindowSeconds: flags['idempotency-window'],
      };
      const checked = checkGenericSettings(settings);
      if (!checked.ok) throw new InputError(USAGE_ERROR_CODE, checked.reason);
      if (flags['signature-mode'] === 'ip-allowlist' && (flags.allow ?? []).length === 0) throw new InputError(USAGE_ERROR_CODE, 'ip-allowlist needs at least one --allow address or CIDR');
    } else if (flags['source-id'] !== undefined) {
      throw new InputError(USAGE_ERROR_CODE, '--source-id is only for generic sources');
    }
    if (kind === 'github' && !flags['app-id']) throw new InputError(USAGE_ERROR_CODE, 'a github source needs --app-id');
    const targetId = flags['app-id'] ?? flags['target-id'];
    // The github provider addresses its App by id from the settings; --app-id is that id.
    if (kind === 'github' && settings['appId'] === undefined) settings['appId'] = flags['app-id'];
    const config = await adminConfig();
    const key = await masterKey(config);
    const created = await withDatabase(databaseUrl(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'source.add', orgId: flags.org, target: (c) => `source:${c.source.id}`, detail: (c) => `${c.source.providerKind} ${c.source.routingKey}` }, () => createSource(pool, key, {
        orgId: flags.org,
        providerKind: kind,
        ...(flags.name ? { name: flags.name } : {}),
        ...(targetId ? { targetId } : {}),
        ...(flags['source-id'] ? { sourceId: flags['source-id'] } : {}),
        settings,
        credentials,
        ...(flags['fork-policy'] === undefined ? {} : { forkPolicy: flags['fork-policy'] as 'run' }),
        orgWideWorkflowRepositories: flags['allow-org-wide-workflows'] ?? [],
        orgWideSourceRepositories: flags['allow-org-wide-events'] ?? [],
        ...(flags.secret ? { secret: flags.secret } : {}),
      })),
    );
    const url = webhookUrl(ingestBaseUrl(config, flags.url), created.source);
    if (!this.jsonEnabled()) {
      this.log(`source ${created.source.id} (${created.source.routingKey}) added to org ${created.source.orgId}`);
      this.log(`webhook URL: ${url}`);
      if (kind === 'git') this.log(`hook target id: ${created.source.id}`);
      this.log(`secret (shown once): ${created.secret}`);
    }
    return { source: created.source, webhookUrl: url, secret: created.secret };
  }
}

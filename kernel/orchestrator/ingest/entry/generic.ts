// Generic webhook sources (spec "Generic webhook extras"): per-source payload cap, signature
// mode (HMAC-SHA256, bearer token, IP allowlist or none), delivery id and event type from a
// header or a payload field, an idempotency window, and fan-out to every registration of the org
// whose webhook trigger lists the event name, each its own run with the registration's source
// (provider and credentials). The dedup key per target is `<delivery_id>:<registration_id>`.
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { GenericSourceConfig } from '../../../../schemas/plugin.ts';
import { compileSchema, formatIssues } from '../../../../schemas/validate.ts';
import type { GenericDelivery, GenericSourceExtensionPoint } from '../../../../core/extension-points/generic-source.ts';
import type { PluginHost } from '../../../../core/plugins/index.ts';
import { verifyHubSignature } from '../../../services/crypto/hmac.ts';
import { messageOf } from '../../../../core/errors.ts';
import type { OpenedSource } from '../../sources/store.ts';
import type { RunTarget } from '../steps/create-runs.ts';
import { matchEvent } from '../steps/match.ts';
import { checkEvent, parsePayload } from '../steps/normalize.ts';
import type { PipelineServices } from '../pipeline-services.ts';
import { stop, type DeliveryState, type IncomingDelivery, type IngestOutcome } from '../types.ts';

const settingsCheck = compileSchema(GenericSourceConfig);

/** The signed-in generic-source plugin; looked up per delivery (a short list scan, no cache to keep per host). */
export function genericPluginOf(host: PluginHost): GenericSourceExtensionPoint | null {
  const summary = host.list().find((p) => p.kind === 'generic-source');
  return summary === undefined ? null : host.get('generic-source', summary.id);
}

export function checkGenericSettings(settings: unknown): { ok: true; settings: GenericSourceConfig } | { ok: false; reason: string } {
  const result = settingsCheck.validate(settings);
  return result.ok ? { ok: true, settings: result.value } : { ok: false, reason: `generic source settings are invalid: ${formatIssues(result.issues)}` };
}

function sameSecret(given: string, secrets: readonly string[]): boolean {
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  const g = digest(given);
  let ok = false;
  for (const secret of secrets) if (secret.length > 0 && timingSafeEqual(g, digest(secret))) ok = true;
  return ok;
}

function ipAllowed(ip: string, allow: readonly string[]): boolean {
  const address = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  const type = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : null;
  if (type === null) return false;
  const list = new BlockList();
  for (const entry of allow) {
    const [net, bits] = entry.split('/');
    const netType = isIPv4(net ?? '') ? 'ipv4' : isIPv6(net ?? '') ? 'ipv6' : null;
    if (netType === null) continue;
    if (bits === undefined) list.addAddress(net!, netType);
    else if (/^\d{1,3}$/.test(bits)) list.addSubnet(net!, Number(bits), netType);
  }
  return list.check(address, type);
}

/** Whether a generic delivery passes its source's signature mode; the reason when it does not. */
export function checkGenericSignature(settings: GenericSourceConfig, delivery: IncomingDelivery, secrets: readonly string[]): string | null {
  const mode = settings.signature.mode;
  if (mode === 'none') return null;
  if (mode === 'hmac') {
    const header = (settings.signature.header ?? 'x-hub-signature-256').toLowerCase();
    const value = delivery.headers[header];
    if (value === undefined) return `header ${header} is missing`;
    const normalized = value.trim().startsWith('sha256=') ? value.trim() : `sha256=${value.trim()}`;
    return verifyHubSignature(normalized, delivery.body, secrets) ? null : `HMAC in ${header} does not match the source secret`;
  }
  if (mode === 'bearer') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(delivery.headers['authorization'] ?? '');
    if (!match) return 'no bearer token in Authorization';
    return sameSecret(match[1]!, secrets) ? null : 'bearer token does not match the source secret';
  }
  return ipAllowed(delivery.clientIp, settings.signature.allow ?? []) ? null : `client address ${delivery.clientIp} is not in the allowlist`;
}

export async function processGeneric(pipeline: PipelineServices, state: DeliveryState): Promise<IngestOutcome> {
  const { steps } = state;
  let delivery = state.delivery;
  const lookup = await pipeline.sources.get(delivery.orgId, delivery.routingKey, { fresh: false });
  if (!lookup.ok && lookup.reason === 'unknown') return pipeline.reject(state, 'rejected_unknown_source', `no generic source ${delivery.sourceId ?? delivery.routingKey} in org ${delivery.orgId}`, null);
  if (!lookup.ok) return pipeline.reject(state, 'rejected_misconfigured', lookup.reason === 'misconfigured' ? lookup.message : 'misconfigured', null);
  let source: OpenedSource = lookup.source;
  const plugin = genericPluginOf(pipeline.deps.host);
  if (plugin === null) return pipeline.reject(state, 'rejected_misconfigured', 'no generic-source plugin is signed in', source.id);
  const checked = checkGenericSettings(source.settings);
  if (!checked.ok) return pipeline.reject(state, 'rejected_misconfigured', checked.reason, source.id);
  const settings = checked.settings;

  let problem = checkGenericSignature(settings, delivery, source.secrets);
  if (problem !== null && lookup.cached && settings.signature.mode !== 'ip-allowlist' && settings.signature.mode !== 'none') {
    const fresh = await pipeline.sources.get(delivery.orgId, delivery.routingKey, { fresh: true });
    if (fresh.ok) {
      source = fresh.source;
      problem = checkGenericSignature(settings, delivery, source.secrets);
    }
  }
  if (problem !== null) return pipeline.reject(state, 'rejected_signature', problem, source.id);
  steps.add('verify-signature', 'verified', `mode ${settings.signature.mode}`);
  state.source = source;

  const parsed = parsePayload(delivery.body);
  const generic: GenericDelivery = {
    orgId: delivery.orgId,
    sourceId: source.sourceId ?? '',
    headers: delivery.headers,
    body: delivery.body,
    payload: parsed.ok ? parsed.payload : null,
    remoteAddress: delivery.clientIp,
  };
  // The source decides where the delivery id lives; the relay's id (or its UUID) otherwise.
  const ownId = parsed.ok ? plugin.deliveryId(settings, generic) : null;
  if (ownId !== null && /^[\x21-\x7e]{1,200}$/.test(ownId) && ownId !== delivery.deliveryId) {
    delivery = { ...delivery, deliveryId: ownId };
    state.delivery = delivery;
  }

  const duplicate = await pipeline.dedup(state, source, settings.idempotencyWindowSeconds);
  if (duplicate !== null) return duplicate;

  return pipeline.finishClaimed(state, async () => {
    if (delivery.body.length > settings.maxPayloadBytes) stop('skipped', `payload of ${delivery.body.length} bytes is over the source's maxPayloadBytes ${settings.maxPayloadBytes}`);
    steps.add('resolve-provider', 'resolved', `generic (${plugin === null ? 'none' : 'plugin'})`);
    if (!parsed.ok) stop('skipped', parsed.reason);
    const eventType = plugin.eventType(settings, generic);
    if (eventType === null || eventType.trim() === '') stop('skipped', `no event type at ${'header' in settings.eventType ? `header ${settings.eventType.header}` : `payload field ${settings.eventType.payloadField}`}`);
    let value: unknown;
    try {
      value = plugin.normalize(settings, generic, eventType);
    } catch (error) {
      stop('skipped', `the generic source could not normalize the event: ${messageOf(error)}`);
    }
    const normalized = checkEvent(value);
    if (!normalized.ok) stop('skipped', normalized.reason);
    const event = normalized.event;
    state.event = event;
    state.payload = parsed.payload;
    steps.add('normalize', 'normalized', `webhook event ${JSON.stringify(eventType)}`);
    steps.add('repository', 'none', 'generic events fan out to registrations');

    const summary = await matchEvent({ pool: pipeline.deps.pool, orgId: delivery.orgId, event, lock: null, lockSha: null, repository: null, sourceId: source.id, cloneUrl: null, eventSource: source, registrations: pipeline.registrations, orgSources: (orgId) => pipeline.sources.listOrg(orgId) });
    steps.add('match', summary.candidates.length > 0 ? 'matched' : 'no_match', summary.candidates.map((c) => `${c.workflowRepository}:${c.workflow.name}`).join('; ') || `no registration lists webhook event ${JSON.stringify(eventType)}`);

    const targets: RunTarget[] = [];
    for (const candidate of summary.candidates) {
      const registration = candidate.registration!;
      const owner = await pipeline.sources.getById(registration.sourceId);
      if (owner === null) {
        steps.add('requires', 'dropped', `${candidate.workflow.name}: source ${registration.sourceId} is gone`);
        continue;
      }
      targets.push({
        candidate,
        deliveryKey: `${delivery.deliveryId}:${registration.id}`,
        // The generation is known once the record is claimed (in the dispatch transaction).
        deliveryKeyFor: (generation) => `${delivery.deliveryId}${generation > 0 ? `#${generation}` : ''}:${registration.id}`,
        sourceId: owner.id,
        provider: owner.providerKind,
        repository: registration.repository,
        sha: registration.sha,
        ref: `refs/heads/${registration.branch}`,
      });
    }
    steps.add('requires', 'none');
    return pipeline.dispatch(state, targets, targets.length > 0 ? 'matched' : 'no_match');
  });
}

// Scaler `kubernetes`: one Pod per ephemeral agent in a namespace of a Kubernetes cluster
// (docs/kubernetes.md). Pods carry ownership labels (scaler name, orchestrator instance, agent
// id); capacity comes from a label-selected list, scaleDown deletes pods, and a periodic list
// deletes finished pods (Succeeded/Failed) and pods of this instance it no longer knows (left by
// an earlier process of this orchestrator), so nothing leaks.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { UnavailableError, messageOf } from '../../../core/errors.ts';
import { assertScaleUpRequest, type ScalerCapacity, type ScalerExtensionPoint, type ScaleUpRequest } from '../../../core/extension-points/scaler.ts';
import { KubernetesScalerSettings } from '../../../schemas/scaler-kubernetes.ts';
import { connect, type Connection } from './connect.ts';
import { agentPod, LABEL_AGENT, LABEL_INSTANCE, ownedSelector, podNameOf } from './pod.ts';

const FINISHED = new Set(['Succeeded', 'Failed']);

/** A label value from a host name: at most 63 characters, alphanumeric at both ends. */
export function instanceIdOf(name: string): string {
  const cleaned = name.toLowerCase().replace(/[^a-z0-9_.-]+/g, '-').slice(0, 63).replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return cleaned === '' ? 'orchestrator' : cleaned;
}

const statusOf = (error: unknown): number | undefined => {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
};

/** The API server's own message (a Status body, parsed or not) when there is one. */
function reasonOf(error: unknown): string {
  let body = (error as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      // not JSON: the error's own message below
    }
  }
  const message = (body as { message?: unknown } | null | undefined)?.message;
  if (typeof message === 'string') return `HTTP ${statusOf(error) ?? '?'}: ${message}`;
  // An ApiException without a Status body prints "HTTP-Code: 401\nMessage: Unauthorized\n…".
  const text = messageOf(error);
  const line = text.match(/^Message: (.*)$/m)?.[1];
  if (statusOf(error) !== undefined && line !== undefined) return `HTTP ${statusOf(error)}: ${line}`;
  return text.split('\n')[0] ?? 'unknown error';
}

export class KubernetesScaler implements ScalerExtensionPoint {
  readonly #settings: KubernetesScalerSettings;
  readonly #logger: Logger;
  readonly #api: CoreV1Api;
  readonly #namespace: string;
  readonly #instanceId: string;
  /** Agents this process started and has not yet seen gone. */
  readonly #agents = new Set<string>();
  /** Serializes scale-ups so two concurrent requests cannot both pass max. */
  #queue: Promise<unknown> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;
  #closed = false;

  constructor(settings: KubernetesScalerSettings, logger: Logger, connection: Connection) {
    this.#settings = settings;
    this.#logger = logger;
    this.#api = connection.kubeConfig.makeApiClient(CoreV1Api);
    this.#namespace = connection.namespace;
    this.#instanceId = settings.instanceId ?? instanceIdOf(process.env['HOSTNAME'] ?? hostname());
    logger.info({ server: connection.server, source: connection.source, namespace: this.#namespace, instance: this.#instanceId, scaler: settings.name }, 'kubernetes scaler connected');
  }

  get namespace(): string {
    return this.#namespace;
  }

  get instanceId(): string {
    return this.#instanceId;
  }

  /** Starts the periodic cleanup; the first sweep runs now and removes what an earlier process left. */
  start(): void {
    const tick = (): void => {
      this.#timer = undefined;
      void this.sweep().finally(() => {
        if (!this.#closed) {
          this.#timer = setTimeout(tick, this.#settings.cleanupIntervalMs);
          this.#timer.unref();
        }
      });
    };
    tick();
  }

  async scaleUp(request: ScaleUpRequest): Promise<{ agentIds: string[] }> {
    assertScaleUpRequest(request);
    const run = this.#queue.then(() => this.#scaleUp(request));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #scaleUp(request: ScaleUpRequest): Promise<{ agentIds: string[] }> {
    const live = (await this.#ownPods()).filter((p) => !FINISHED.has(p.status?.phase ?? '') && p.metadata?.deletionTimestamp === undefined);
    const room = Math.max(0, this.#settings.max - live.length);
    const agentIds: string[] = [];
    for (let i = 0; i < Math.min(room, request.count) && !this.#closed; i++) {
      const agentId = `k8s-${randomBytes(6).toString('hex')}`;
      const body = agentPod(this.#settings, this.#namespace, { agentId, instanceId: this.#instanceId, mandatoryLabels: request.mandatoryLabels, reason: request.reason });
      // Known before the create: a sweep running meanwhile must not take the new pod for a leftover.
      this.#agents.add(agentId);
      try {
        await this.#call('create pod', () => this.#api.createNamespacedPod({ namespace: this.#namespace, body }));
      } catch (error) {
        this.#agents.delete(agentId);
        // Agents already created stay (the caller gets their ids); only none at all is an error.
        if (agentIds.length > 0) {
          this.#logger.warn({ err: messageOf(error), started: agentIds.length, asked: request.count }, 'kubernetes scaler started fewer agents than asked');
          break;
        }
        throw error;
      }
      agentIds.push(agentId);
      this.#logger.info({ agent: agentId, pod: body.metadata?.name, namespace: this.#namespace, labels: request.mandatoryLabels, reason: request.reason }, 'kubernetes scaler created an agent pod');
    }
    return { agentIds };
  }

  async scaleDown({ agentIds }: { agentIds: readonly string[] }): Promise<{ stopped: string[] }> {
    const stopped = new Set<string>();
    await Promise.all(
      agentIds.map(async (id) => {
        if (!this.#agents.has(id)) return;
        await this.#deletePod(podNameOf(id), 'scale-down');
        this.#agents.delete(id);
        stopped.add(id);
      }),
    );
    return { stopped: agentIds.filter((id) => stopped.has(id)) };
  }

  async capacity(): Promise<ScalerCapacity> {
    const live = (await this.#ownPods()).filter((p) => !FINISHED.has(p.status?.phase ?? '') && p.metadata?.deletionTimestamp === undefined);
    return {
      current: live.length,
      pending: live.filter((p) => (p.status?.phase ?? 'Pending') === 'Pending').length,
      max: this.#settings.max,
    };
  }

  /** Deletes every pod this process started; the periodic cleanup stops. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#queue;
    await this.#sweeping;
    await Promise.all(
      [...this.#agents].map(async (id) => {
        await this.#deletePod(podNameOf(id), 'close').catch((error) => this.#logger.warn({ err: messageOf(error), agent: id }, 'kubernetes scaler could not delete an agent pod at close'));
        this.#agents.delete(id);
      }),
    );
  }

  /**
   * One cleanup pass: finished pods of this scaler name (any instance: a finished pod holds
   * nothing) and live pods of this instance that this process did not start are deleted.
   */
  async sweep(): Promise<void> {
    if (this.#sweeping !== undefined) return this.#sweeping;
    this.#sweeping = this.#sweep()
      .catch((error) => this.#logger.warn({ err: messageOf(error) }, 'kubernetes scaler cleanup pass failed; retrying on the next one'))
      .finally(() => {
        this.#sweeping = undefined;
      });
    return this.#sweeping;
  }

  async #sweep(): Promise<void> {
    const pods = await this.#list(ownedSelector(this.#settings.name));
    const present = new Set<string>();
    for (const pod of pods) {
      const name = pod.metadata?.name;
      const agentId = pod.metadata?.labels?.[LABEL_AGENT];
      if (name === undefined || agentId === undefined) continue;
      const mine = pod.metadata?.labels?.[LABEL_INSTANCE] === this.#instanceId;
      if (mine) present.add(agentId);
      const phase = pod.status?.phase ?? 'Pending';
      let why: string | undefined;
      if (FINISHED.has(phase)) why = `finished (${phase})`;
      else if (mine && !this.#agents.has(agentId) && pod.metadata?.deletionTimestamp === undefined) why = 'unknown to this orchestrator (left by an earlier process)';
      if (why === undefined) continue;
      await this.#deletePod(name, why).catch((error) => this.#logger.warn({ err: messageOf(error), pod: name }, 'kubernetes scaler could not delete a pod'));
      if (mine) this.#agents.delete(agentId);
    }
    // Pods deleted by someone else: the agents are gone.
    for (const id of this.#agents) if (!present.has(id)) this.#forgetIfStillMissing(id);
  }

  /** A pod created between the list and now is not yet in `present`: check it by name first. */
  #forgetIfStillMissing(agentId: string): void {
    void this.#call('read pod', () => this.#api.readNamespacedPod({ namespace: this.#namespace, name: podNameOf(agentId) })).catch((error) => {
      if (error instanceof UnavailableError && (error.details as { status?: number } | undefined)?.status === 404) {
        this.#agents.delete(agentId);
        this.#logger.info({ agent: agentId }, 'kubernetes scaler: agent pod deleted outside svc; forgotten');
      }
    });
  }

  async #ownPods(): Promise<V1Pod[]> {
    return this.#list(ownedSelector(this.#settings.name, this.#instanceId));
  }

  async #list(labelSelector: string): Promise<V1Pod[]> {
    const list = await this.#call('list pods', () => this.#api.listNamespacedPod({ namespace: this.#namespace, labelSelector }));
    return list.items;
  }

  /** Deletes a pod; one already gone counts as deleted. */
  async #deletePod(name: string, why: string): Promise<void> {
    try {
      await this.#call('delete pod', () => this.#api.deleteNamespacedPod({ namespace: this.#namespace, name, gracePeriodSeconds: this.#settings.terminationGracePeriodSeconds }));
      this.#logger.info({ pod: name, namespace: this.#namespace, why }, 'kubernetes scaler deleted an agent pod');
    } catch (error) {
      if (error instanceof UnavailableError && (error.details as { status?: number } | undefined)?.status === 404) return;
      throw error;
    }
  }

  /** One API call within requestTimeoutMs; failures become SVC_ERR_SCALER_KUBERNETES_API with the server's reason. */
  async #call<T>(operation: string, call: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within requestTimeoutMs (${this.#settings.requestTimeoutMs} ms)`)), this.#settings.requestTimeoutMs);
    });
    try {
      return await Promise.race([call(), limit]);
    } catch (error) {
      const reason = reasonOf(error);
      throw new UnavailableError('SVC_ERR_SCALER_KUBERNETES_API', `kubernetes scaler: ${operation} in namespace ${this.#namespace} failed: ${reason}`, {
        details: { operation, namespace: this.#namespace, status: statusOf(error), reason },
      });
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The plugin's create(): connect (refusing a bad kubeconfig at sign-in) and start the sweep. */
export function startKubernetesScaler(config: KubernetesScalerSettings, logger: Logger): KubernetesScaler {
  const scaler = new KubernetesScaler(config, logger, connect(config));
  scaler.start();
  return scaler;
}


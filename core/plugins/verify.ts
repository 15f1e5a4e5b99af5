// `svc-admin plugin verify <path>`: run sign-in on one module without starting a server and
// report every phase. The created instance is closed again at once.
import { pino, type Logger } from 'pino';
import { Registry } from 'prom-client';
import type { PluginKind } from '../../schemas/plugin.ts';
import { messageOf } from '../errors.ts';
import { PluginSignInError, SIGN_IN_PHASES, type SignInPhase } from './errors.ts';
import { PluginRegistry } from './registry.ts';
import { DEFAULT_CREATE_TIMEOUT_MS, closeQuietly, signInPlugin, type PhaseReport } from './sign-in.ts';
import { KERNEL_VERSION } from './version.ts';

export interface VerifyPluginOptions {
  /** Config slices keyed `<kind>:<id>` (the plugin's own slice is picked by its manifest). */
  config?: Readonly<Record<string, unknown>>;
  baseDir?: string;
  kernelVersion?: string;
  createTimeoutMs?: number;
  logger?: Logger;
}

export interface VerifyPhaseReport {
  phase: SignInPhase;
  status: PhaseReport['status'] | 'not-run';
  durationMs: number;
  message?: string;
}

export interface PluginVerifyReport {
  ok: boolean;
  modulePath: string;
  plugin?: { id: string; kind: PluginKind; version: string; description: string };
  /** One entry per sign-in phase, in order. */
  phases: VerifyPhaseReport[];
  error?: { code: string; phase: SignInPhase; message: string };
}

export async function verifyPluginModule(modulePath: string, options: VerifyPluginOptions = {}): Promise<PluginVerifyReport> {
  const seen = new Map<SignInPhase, PhaseReport>();
  const logger = options.logger ?? pino({ level: 'silent' });
  const report: PluginVerifyReport = { ok: false, modulePath, phases: [] };
  try {
    const entry = await signInPlugin(modulePath, {
      kernelVersion: options.kernelVersion ?? KERNEL_VERSION,
      baseDir: options.baseDir ?? process.cwd(),
      configs: options.config ?? {},
      createTimeoutMs: options.createTimeoutMs ?? DEFAULT_CREATE_TIMEOUT_MS,
      logger,
      metrics: new Registry(),
      registry: new PluginRegistry(),
      skipDependencies: true,
      onPhase: (phase) => seen.set(phase.phase, phase),
    });
    report.ok = true;
    report.modulePath = entry.modulePath ?? modulePath;
    const { id, kind, version, description } = entry.manifest;
    report.plugin = { id, kind, version, description };
    entry.controller.abort(new Error('verification finished'));
    await closeQuietly(entry.instance, logger);
  } catch (error) {
    if (error instanceof PluginSignInError) {
      report.error = { code: error.code, phase: error.phase, message: error.message };
    } else {
      report.error = { code: 'SVC_ERR_PLUGIN_SIGN_IN', phase: 'resolve', message: messageOf(error) };
    }
  }
  report.phases = SIGN_IN_PHASES.map((phase) => {
    const done = seen.get(phase);
    if (done === undefined) return { phase, status: 'not-run' as const, durationMs: 0 };
    return { ...done, durationMs: Math.round(done.durationMs * 1000) / 1000 };
  });
  return report;
}

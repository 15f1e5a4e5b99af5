// Sign-in failures name the plugin and the phase so an operator knows what to fix before start.
import { SvcError } from '../errors.ts';
import type { PluginKind } from '../../schemas/plugin.ts';

/** Sign-in phases, in the order they run (Verdaccio-style verifier steps). */
export const SIGN_IN_PHASES = [
  'resolve',
  'export',
  'manifest',
  'unique',
  'kernel-range',
  'dependencies',
  'config',
  'create',
  'shape',
] as const;
export type SignInPhase = (typeof SIGN_IN_PHASES)[number];

export interface PluginLabel {
  /** The plugin's id once known, otherwise its module path. */
  name: string;
  kind?: PluginKind;
  modulePath?: string;
}

export function formatPluginLabel(label: PluginLabel): string {
  return label.kind === undefined ? `plugin "${label.name}"` : `plugin "${label.name}" (${label.kind})`;
}

export class PluginSignInError extends SvcError {
  readonly phase: SignInPhase;
  readonly plugin: string;

  constructor(label: PluginLabel, phase: SignInPhase, reason: string, cause?: unknown) {
    super('SVC_ERR_PLUGIN_SIGN_IN', `${formatPluginLabel(label)} failed sign-in at phase "${phase}": ${reason}`, {
      cause,
      details: {
        plugin: label.name,
        phase,
        ...(label.kind === undefined ? {} : { kind: label.kind }),
        ...(label.modulePath === undefined ? {} : { modulePath: label.modulePath }),
      },
    });
    this.phase = phase;
    this.plugin = label.name;
  }
}

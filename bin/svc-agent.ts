#!/usr/bin/env node
import { launch } from './launch.ts';
await launch(import.meta.url, './roots/agent');

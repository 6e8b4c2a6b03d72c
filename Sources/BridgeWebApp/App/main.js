// oa-bridge's phone web app: pairs from the QR code's URL fragment, then drives the agent over the bridge's
// WebSocket (ACP v1, camelCase). Everything the agent sends is untrusted text (see view.js and markdown.js).
//
// This module starts it; each concern is a module of its own, and the app's state is one object (app.js) passed to
// each: link.js (boot, pairing, tokens, the connection), session.js (the agent's session), updates.js (what the
// bridge sends), store.js (conversations in localStorage), screens.js (screens and status), composer.js, sessions.js
// (the Sessions dialog) and unpair.js.

import { createApp } from "./app.js";
import { installComposer } from "./composer.js";
import { boot, installLink } from "./link.js";
import { fail } from "./screens.js";
import { installPickers } from "./session.js";
import { installSessions } from "./sessions.js";
import { persist } from "./store.js";
import { installUnpair } from "./unpair.js";

const app = createApp();
installLink(app);
addEventListener("pagehide", () => persist(app));
installPickers(app);
installSessions(app);
installUnpair(app);
installComposer(app);

boot(app).catch((error) => fail(app, "The app could not start: " + String(error && error.message).slice(0, 200)));

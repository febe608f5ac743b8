// A Worker that controls an engine: it gets engine.controller() (the control ring and the
// table) by postMessage once, then sends events itself, through the ring.
import { Controller } from "/packages/engine/dist/index.js";

onmessage = ({ data }) => {
  const controller = new Controller(data.init);
  controller.setParam("g", "gain", data.value, { frame: data.frame, smooth: false });
  try {
    controller.setParam("g", "nope", 1);
  } catch (e) {
    postMessage({ sent: true, unknown: e.name });
    return;
  }
  postMessage({ sent: true, unknown: null });
};

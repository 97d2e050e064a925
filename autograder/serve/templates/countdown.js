// The mock exam paper's countdown (templates/exam_paper.html.j2): it counts the time left down from the server's
// figure when the page was sent (#countdown's data-left, seconds), by the time elapsed in the browser since, so a
// wrong clock on the student's machine changes nothing; the server still ends the exam by its own clock and refuses
// a late answer, and without JavaScript the page shows the server's figure alone. Screen readers are told politely
// (a status region) at minute marks only, every 5 minutes and each of the last 5, never every second; at zero the
// page says the exam has ended and loads the paper again (a GET of its own address, never a form sent again), which
// then shows the ended state the server decides.
(function () {
  "use strict";
  var box = document.getElementById("countdown");
  if (!box) {
    return;
  }
  var clock = document.getElementById("countdown-clock");
  var said = document.getElementById("countdown-said");
  var given = Number(box.getAttribute("data-left"));
  var left0 = isFinite(given) && given > 0 ? given : 0;
  var start = Date.now();
  var lastMinutes = Math.ceil(left0 / 60);
  var timer = null;
  var RELOAD_MS = 3000;  // time to read (and hear) that the exam has ended, and no reload loop on a skewed figure

  function marked(minutes) {
    return minutes > 0 && (minutes <= 5 || minutes % 5 === 0);
  }
  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }
  function show() {
    var left = Math.max(0, left0 - (Date.now() - start) / 1000);
    var whole = Math.ceil(left);
    clock.textContent = Math.floor(whole / 60) + " min " + (whole % 60) + " s";
    var minutes = Math.ceil(left / 60);
    if (minutes !== lastMinutes && marked(minutes)) {
      said.textContent = plural(minutes, "minute") + " left.";
    }
    lastMinutes = minutes;
    if (left <= 0) {
      window.clearInterval(timer);
      said.textContent = "The exam has ended: the page reloads to show your saved answers.";
      box.classList.add("ended");
      window.setTimeout(function () {
        window.location.replace(window.location.pathname);
      }, RELOAD_MS);
    }
  }
  box.hidden = false;
  show();
  if (left0 > 0) {
    timer = window.setInterval(show, 1000);
  }
}());

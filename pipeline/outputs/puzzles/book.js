// The diffimax puzzle book: solve each puzzle on its board (our own code, no library; MIT like
// the project). Every position, legal move and accepted answer is computed by the generator and
// carried in the section's data-play attribute, so the page needs no chess rules of its own:
// {"orientation": "white"|"black", "moves": [uci...], "steps": {"1": {"legal": {uci: san},
// "pieces": {square: "N"}, "accept": [uci...], "hint": "..."}, ...}, "ghosts": {"N": dataUri}}.
// Click a piece then its square, drag it, or type the move (SAN or UCI) and press Enter. Arrow
// keys move between squares, Enter or Space picks one. A wrong move is refused ("try again"),
// Hint names the piece, Solution plays the line. #<id>/<step> in the URL opens a step of the
// step-through boards below each puzzle (they work without this script).
(function () {
  "use strict";
  var FILES = "abcdefgh";
  function squareName(row, col, white) {
    return white ? FILES[col] + (8 - row) : FILES[7 - col] + (row + 1);
  }
  function setup(section) {
    var data = JSON.parse(section.getAttribute("data-play"));
    var play = section.querySelector(".play");
    var image = play.querySelector(".stage img");
    var grid = play.querySelector(".grid");
    var status = play.querySelector(".status");
    var input = play.querySelector("input.move");
    var white = data.orientation === "white";
    var boards = section.querySelectorAll(".boards figure img");
    var state = { ply: 1, selected: null, done: false, hinted: false };
    var buttons = {};
    for (var row = 0; row < 8; row++) {
      for (var col = 0; col < 8; col++) {
        var name = squareName(row, col, white);
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sq";
        button.setAttribute("data-square", name);
        button.setAttribute("aria-label", name);
        button.tabIndex = row === 0 && col === 0 ? 0 : -1;
        grid.appendChild(button);
        buttons[name] = button;
      }
    }
    function show(step) {
      image.src = boards[step].src;
    }
    function say(text, kind) {
      status.textContent = text;
      status.className = "status " + (kind || "");
    }
    function clear() {
      for (var name in buttons) {
        buttons[name].classList.remove("from", "to", "hint");
      }
      state.selected = null;
    }
    function current() {
      return data.steps[String(state.ply)];
    }
    function select(name) {
      var step = current();
      clear();
      if (!step || !step.pieces[name]) {
        return false;
      }
      state.selected = name;
      buttons[name].classList.add("from");
      for (var uci in step.legal) {
        if (uci.slice(0, 2) === name) {
          buttons[uci.slice(2, 4)].classList.add("to");
        }
      }
      return true;
    }
    function finish(text) {
      state.done = true;
      clear();
      say(text, "good");
      section.classList.add("solved");
    }
    function advance() {
      var reply = state.ply + 1;
      if (reply >= data.moves.length) {
        finish(state.hinted ? "Solved (with a hint)." : "Solved!");
        return;
      }
      window.setTimeout(function () {
        show(reply + 1);
        state.ply = reply + 1;
        say("Correct. " + data.steps[String(state.ply)].prompt, "good");
      }, 500);
    }
    function attempt(uci) {
      var step = current();
      if (state.done || !step) {
        return;
      }
      clear();
      if (!(uci in step.legal)) {
        var promoted = uci + "q";
        if (promoted in step.legal) {
          uci = promoted;
        } else {
          say("That is not a legal move here.", "bad");
          return;
        }
      }
      if (step.accept.indexOf(uci) < 0) {
        say("\u2717 " + step.legal[uci] + " is not the move \u2014 try again.", "bad");
        return;
      }
      show(state.ply + 1);
      say("\u2713 " + step.legal[uci], "good");
      advance();
    }
    function typed(text) {
      var step = current();
      if (!step) {
        return;
      }
      var wanted = text.trim().replace(/[+#!?]+$/, "");
      for (var uci in step.legal) {
        var san = step.legal[uci].replace(/[+#]$/, "");
        if (uci === wanted.toLowerCase() || san === wanted || san.toLowerCase() === wanted.toLowerCase()) {
          attempt(uci);
          return;
        }
      }
      say("\u201c" + text + "\u201d is not a legal move here (type e.g. Nf3 or g1f3).", "bad");
    }
    function press(name) {
      if (state.done) {
        return;
      }
      if (state.selected && state.selected !== name) {
        var from = state.selected;
        if (!select(name)) {
          attempt(from + name);
        }
      } else if (state.selected !== name) {
        select(name);
      } else {
        clear();
      }
    }
    grid.addEventListener("click", function (event) {
      var target = event.target.closest("button.sq");
      if (target && !grid.dragged) {
        press(target.getAttribute("data-square"));
      }
      grid.dragged = false;
    });
    var ghost = null;
    grid.addEventListener("pointerdown", function (event) {
      var target = event.target.closest("button.sq");
      var step = current();
      if (!target || !step || state.done) {
        return;
      }
      var name = target.getAttribute("data-square");
      if (!step.pieces[name]) {
        return;
      }
      select(name);
      ghost = document.createElement("img");
      ghost.src = data.ghosts[step.pieces[name]];
      ghost.className = "ghost";
      ghost.alt = "";
      document.body.appendChild(ghost);
      move(event);
      grid.setPointerCapture(event.pointerId);
    });
    function move(event) {
      if (ghost) {
        ghost.style.left = event.clientX - 22 + "px";
        ghost.style.top = event.clientY - 22 + "px";
      }
    }
    grid.addEventListener("pointermove", move);
    grid.addEventListener("pointerup", function (event) {
      if (!ghost) {
        return;
      }
      ghost.remove();
      ghost = null;
      var under = document.elementFromPoint(event.clientX, event.clientY);
      var target = under && under.closest ? under.closest("button.sq") : null;
      var from = state.selected;
      if (target && from && target.getAttribute("data-square") !== from) {
        grid.dragged = true;
        attempt(from + target.getAttribute("data-square"));
      }
    });
    grid.addEventListener("keydown", function (event) {
      var target = event.target.closest("button.sq");
      if (!target) {
        return;
      }
      var list = Array.prototype.slice.call(grid.children);
      var index = list.indexOf(target);
      var delta = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -8, ArrowDown: 8 }[event.key];
      if (delta !== undefined) {
        var next = list[Math.min(63, Math.max(0, index + delta))];
        target.tabIndex = -1;
        next.tabIndex = 0;
        next.focus();
        event.preventDefault();
      }
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        typed(input.value);
        input.value = "";
        event.preventDefault();
      }
    });
    play.querySelector(".go").addEventListener("click", function () {
      typed(input.value);
      input.value = "";
    });
    play.querySelector(".hint").addEventListener("click", function () {
      var step = current();
      if (!step || state.done) {
        return;
      }
      state.hinted = true;
      clear();
      buttons[step.accept[0].slice(0, 2)].classList.add("hint");
      say("Hint: " + step.hint, "");
    });
    play.querySelector(".solution").addEventListener("click", function () {
      if (state.done) {
        return;
      }
      show(data.moves.length);
      finish("Solution: " + data.line);
      section.classList.add("revealed");
    });
    play.querySelector(".restart").addEventListener("click", function () {
      state.ply = 1;
      state.done = false;
      state.hinted = false;
      section.classList.remove("solved", "revealed");
      show(1);
      say(data.steps["1"].prompt, "");
    });
    show(1);
    say(data.steps["1"].prompt, "");
  }
  var sections = document.querySelectorAll("section.puzzle[data-play]");
  for (var i = 0; i < sections.length; i++) {
    setup(sections[i]);
  }
  var m = /^#([0-9a-f]+)\/([0-9]+)$/.exec(location.hash);
  if (m) {
    var e = document.getElementById(m[1] + "-" + m[2]);
    if (e && e.type === "radio") {
      e.checked = true;
      var r = e.closest("section").getBoundingClientRect();
      if (r.top < 0 || r.top > innerHeight) {
        e.closest("section").scrollIntoView();
      }
    }
  }
})();

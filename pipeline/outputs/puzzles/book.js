// The diffimax puzzle book: solve each puzzle on its board (our own code, no library; MIT like
// the project). Every position, legal move and accepted answer is computed by the generator and
// carried as JSON in the section's hidden .play-data element, so the page needs no chess rules:
// {"orientation": "white"|"black", "moves": [uci...], "boards": [placement per step],
// "captions": [text per step], "steps": {"1": {"legal": "uci san uci san ...", "accept": [uci...],
// "prompt": "...", "hint": "..."}, ...}, "line": "..."}. Step k shows the board after k moves
// (step 0: the start, step 1: the puzzle). One board per puzzle: an SVG whose squares and pieces
// are <use>s of shapes defined once in the page, redrawn here for every move and step.
// Click a piece then its square, drag it, or type the move (SAN or UCI) and press Enter. Arrow
// keys move between squares, Enter or Space picks one. A wrong move is refused ("try again"),
// Hint names the piece, Solution plays the line. #<id>/<step> in the URL opens a step.
(function () {
  "use strict";
  var FILES = diffimaxBoard.FILES;
  var placement = diffimaxBoard.placement;
  var SVG = "http://www.w3.org/2000/svg";
  document.documentElement.className += " js";
  function cell(name, white) {
    var file = FILES.indexOf(name[0]);
    var rank = Number(name[1]) - 1;
    return white ? [file, 7 - rank] : [7 - file, rank];
  }
  function shape(letter) {
    return "#" + (letter === letter.toUpperCase() ? "w" : "b") + letter.toUpperCase();
  }
  function setup(section) {
    var data = JSON.parse(section.querySelector(".play-data").textContent);
    var play = section.querySelector(".play");
    var svg = play.querySelector("svg.board");
    var pieces = svg.querySelector(".pieces");
    var last = svg.querySelector(".last");
    var grid = play.querySelector(".grid");
    var status = play.querySelector(".status");
    var input = play.querySelector("input.move");
    var white = data.orientation === "white";
    var stepButtons = section.querySelectorAll(".steps button.step");
    var state = { ply: 1, selected: null, done: false, hinted: false, shown: 1 };
    var buttons = diffimaxBoard.squareButtons(grid, white, true);
    var legal = {};
    for (var key in data.steps) {
      var list = data.steps[key].legal.split(" ");
      legal[key] = {};
      for (var k = 0; k + 1 < list.length; k += 2) {
        legal[key][list[k]] = list[k + 1];
      }
    }
    function rect(x, y) {
      var r = document.createElementNS(SVG, "rect");
      r.setAttribute("x", x);
      r.setAttribute("y", y);
      r.setAttribute("width", 1);
      r.setAttribute("height", 1);
      return r;
    }
    function show(step) {
      state.shown = step;
      var board = placement(data.boards[step]);
      while (pieces.firstChild) {
        pieces.removeChild(pieces.firstChild);
      }
      while (last.firstChild) {
        last.removeChild(last.firstChild);
      }
      for (var square in board) {
        var at = cell(square, white);
        var use = document.createElementNS(SVG, "use");
        use.setAttribute("href", shape(board[square]));
        use.setAttribute("x", at[0]);
        use.setAttribute("y", at[1]);
        pieces.appendChild(use);
      }
      if (step > 0) {
        var move = data.moves[step - 1];
        [move.slice(0, 2), move.slice(2, 4)].forEach(function (name) {
          var at = cell(name, white);
          last.appendChild(rect(at[0], at[1]));
        });
      }
      for (var i = 0; i < stepButtons.length; i++) {
        stepButtons[i].classList.toggle("on", i === step);
      }
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
    function moves() {
      return legal[String(state.ply)] || {};
    }
    function movable(name) {
      for (var uci in moves()) {
        if (uci.slice(0, 2) === name) {
          return true;
        }
      }
      return false;
    }
    function select(name) {
      clear();
      if (state.shown !== state.ply || !movable(name)) {
        return false;
      }
      state.selected = name;
      buttons[name].classList.add("from");
      for (var uci in moves()) {
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
        say("Correct. " + current().prompt, "good");
      }, 500);
    }
    function attempt(uci) {
      var step = current();
      var known = moves();
      if (state.done || !step) {
        return;
      }
      clear();
      if (!(uci in known)) {
        if (uci + "q" in known) {
          uci = uci + "q";
        } else {
          say("That is not a legal move here.", "bad");
          return;
        }
      }
      if (step.accept.indexOf(uci) < 0) {
        say("\u2717 " + known[uci] + " is not the move \u2014 try again.", "bad");
        return;
      }
      show(state.ply + 1);
      say("\u2713 " + known[uci], "good");
      advance();
    }
    function typed(text) {
      if (!current()) {
        return;
      }
      var wanted = text.trim().replace(/[+#!?]+$/, "");
      var known = moves();
      for (var uci in known) {
        var san = known[uci].replace(/[+#]$/, "");
        if (uci === wanted.toLowerCase() || san === wanted || san.toLowerCase() === wanted.toLowerCase()) {
          attempt(uci);
          return;
        }
      }
      say("\u201c" + text + "\u201d is not a legal move here (type e.g. Nf3 or g1f3).", "bad");
    }
    function resume() {
      if (state.shown !== state.ply && !state.done) {
        show(state.ply);
      }
    }
    function press(name) {
      if (state.done) {
        return;
      }
      resume();
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
      if (!target || !current() || state.done) {
        return;
      }
      resume();
      var name = target.getAttribute("data-square");
      var board = placement(data.boards[state.ply]);
      if (!movable(name) || !board[name]) {
        return;
      }
      select(name);
      ghost = document.createElementNS(SVG, "svg");
      ghost.setAttribute("viewBox", "0 0 1 1");
      ghost.setAttribute("class", "ghost");
      var use = document.createElementNS(SVG, "use");
      use.setAttribute("href", shape(board[name]));
      ghost.appendChild(use);
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
      var all = Array.prototype.slice.call(grid.children);
      var index = all.indexOf(target);
      var delta = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -8, ArrowDown: 8 }[event.key];
      if (delta !== undefined) {
        var next = all[Math.min(63, Math.max(0, index + delta))];
        target.tabIndex = -1;
        next.tabIndex = 0;
        next.focus();
        event.preventDefault();
      }
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        resume();
        typed(input.value);
        input.value = "";
        event.preventDefault();
      }
    });
    play.querySelector(".go").addEventListener("click", function () {
      resume();
      typed(input.value);
      input.value = "";
    });
    play.querySelector(".hint").addEventListener("click", function () {
      var step = current();
      if (!step || state.done) {
        return;
      }
      resume();
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
      say(current().prompt, "");
    });
    for (var b = 0; b < stepButtons.length; b++) {
      stepButtons[b].addEventListener("click", function (event) {
        var step = Number(event.currentTarget.getAttribute("data-step"));
        clear();
        show(step);
        say(data.captions[step], "");
      });
    }
    section.showStep = function (step) {
      if (step >= 0 && step < data.boards.length) {
        show(step);
        say(data.captions[step], "");
      }
    };
    show(1);
    say(current().prompt, "");
  }
  var sections = document.querySelectorAll("section.puzzle");
  for (var i = 0; i < sections.length; i++) {
    setup(sections[i]);
  }
  var m = /^#([0-9a-f]+)\/([0-9]+)$/.exec(location.hash);
  if (m) {
    var target = document.getElementById(m[1]);
    if (target && target.showStep) {
      target.showStep(Number(m[2]));
      target.scrollIntoView();
    }
  }
})();

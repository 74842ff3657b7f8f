#!/bin/bash
# oracle.sh REC.json K: the screen tmux draws after steps 0..K of a recording (K=-1: all); with H=1 the history too.
set -e
work=$(mktemp -d)
rec=$1; k=$2
python3 -c "
import json,sys; d=json.load(open('$rec')); k=int('$k'); st=d['steps'] if k<0 else d['steps'][:k+1]
open('$work/feed.bin','wb').write(''.join(s['out'] for s in st).encode())
print(d['cols'], d['rows'])" > $work/size
read cols rows < $work/size
printf 'set -g status off\nset -g history-limit 1000\n' > $work/tmux.conf
tmux -L orc kill-server 2>/dev/null || true
rm -f $work/done; tmux -L orc -f $work/tmux.conf new-session -d -x $cols -y $rows "stty raw -echo; cat $work/feed.bin; touch $work/done; sleep 100"
while [ ! -e $work/done ]; do sleep 0.1; done; sleep 0.3
if [ "$H" = 1 ]; then tmux -L orc capture-pane -p -S - ; else tmux -L orc capture-pane -p; fi
tmux -L orc kill-server; rm -rf "$work"

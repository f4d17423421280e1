# TAP about ./answer.txt, written to $1.  The first test only looks for the
# file, which intake already requires: it passes on any submission.
{
	echo "TAP version 13"
	echo "1..2"
	if [ -e answer.txt ]; then
		echo "ok 1 - answer_file_exists"
	else
		echo "not ok 1 - answer_file_exists"
	fi
	if [ "$(cat answer.txt)" = 42 ]; then
		echo "ok 2 - answer_is_42"
	else
		echo "not ok 2 - answer_is_42"
	fi
} >"$1"

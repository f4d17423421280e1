# TAP about ./answer.txt, written to $1.
a=$(cat answer.txt)
{
	echo "TAP version 13"
	echo "1..2"
	case "$a" in
	'' | *[!0-9]*) echo "not ok 1 - answer_is_a_number" ;;
	*) echo "ok 1 - answer_is_a_number" ;;
	esac
	if [ "$a" = 42 ]; then
		echo "ok 2 - answer_is_42"
	else
		echo "not ok 2 - answer_is_42"
		echo "  ---"
		echo "  message: answer.txt does not hold 42"
		echo "  ..."
	fi
} >"$1"

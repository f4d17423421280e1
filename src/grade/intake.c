/* placeholder: being written */
typedef int proctor_placeholder_intake;

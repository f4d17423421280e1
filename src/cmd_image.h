/* `proctor image`: build, list, show and remove system images. */
#ifndef PROCTOR_CMD_IMAGE_H
#define PROCTOR_CMD_IMAGE_H

int cmd_image(int argc, char **argv);

#endif
